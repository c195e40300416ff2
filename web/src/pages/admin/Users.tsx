import { useState } from "react";
import { api, errorMessage } from "../../api/client";

export function Users() {
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<"user" | "admin">("user");
  const [created, setCreated] = useState<{ user: string; key: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const create = async (event: React.FormEvent) => {
    event.preventDefault();
    setError(null);
    const { data, error: refused } = await api.POST("/v1/users", { body: { email: email || null, role, key_name: "default" } });
    if (refused || !data) return setError(errorMessage(refused));
    setCreated({ user: data.user.user_id, key: data.api_key.api_key });
    setEmail("");
  };
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Users</h1>
      <form onSubmit={create} className="flex items-end gap-2 text-sm">
        <label className="flex flex-col">
          Email
          <input className="rounded border border-slate-400 px-2 py-1" type="email" value={email} onChange={(e) => setEmail(e.target.value)} />
        </label>
        <label className="flex flex-col">
          Role
          <select className="rounded border border-slate-400 px-2 py-1" value={role} onChange={(e) => setRole(e.target.value as "user" | "admin")}>
            <option value="user">user</option>
            <option value="admin">admin</option>
          </select>
        </label>
        <button type="submit" className="rounded bg-slate-900 px-3 py-1.5 text-white">Create user</button>
      </form>
      {error && <p role="alert" className="text-sm text-red-700">{error}</p>}
      {created && (
        <p className="text-sm">
          User <span className="font-mono">{created.user}</span>; its first key, shown once:{" "}
          <code className="break-all rounded bg-slate-100 p-1">{created.key}</code>
        </p>
      )}
    </div>
  );
}
