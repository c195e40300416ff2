import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, count, credits, errorMessage, type Schemas, unwrap, when } from "../../api/client";
import { UserLimits } from "./UserLimits";
import { UserSpendingCaps } from "./UserSpendingCaps";

const PAGE = 50;
const MICRO = 1_000_000;

/** A fresh key for one grant: sent again by a retry or a double click, so they are one grant. */
export function newGrantKey(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

function GrantForm({ user, onGranted }: { user: Schemas["UserResponse"]; onGranted: (message: string) => void }) {
  const [amount, setAmount] = useState("");
  // one key per grant: made when the form is, renewed only after a grant went through
  const [key, setKey] = useState(newGrantKey);
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const grant = async (event: React.FormEvent) => {
    event.preventDefault();
    if (pending) return;
    setError(null);
    setPending(true);
    const { data, error: refused } = await api.POST("/v1/admin/users/{user_id}/credit-grants", {
      params: { path: { user_id: user.user_id }, header: { "Idempotency-Key": key } },
      body: { amount: Math.round(Number(amount) * MICRO) },
    });
    setPending(false);
    if (refused || !data) return setError(errorMessage(refused));
    setKey(newGrantKey());
    setAmount("");
    onGranted(`Granted ${credits(data.amount)} credits to ${user.email ?? user.user_id}: balance ${credits(data.balance)}`);
  };
  return (
    <form onSubmit={grant} className="flex items-center gap-2">
      <label className="sr-only" htmlFor={`grant-${user.user_id}`}>Credits to grant to {user.email ?? user.user_id}</label>
      <input
        id={`grant-${user.user_id}`}
        className="w-28 rounded border border-slate-400 px-2 py-1"
        type="number"
        min="0.000001"
        step="any"
        required
        value={amount}
        onChange={(e) => setAmount(e.target.value)}
        placeholder="credits"
      />
      <button type="submit" disabled={pending} className="rounded bg-slate-900 px-3 py-1 text-white disabled:opacity-60">
        Grant
      </button>
      {error && <span role="alert" className="text-red-700">{error}</span>}
    </form>
  );
}

export function Users() {
  const queries = useQueryClient();
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<"user" | "admin">("user");
  const [created, setCreated] = useState<{ user: string; key: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [offset, setOffset] = useState(0);
  const users = useQuery({
    queryKey: ["admin-users", offset],
    queryFn: async () => unwrap(await api.GET("/v1/admin/users", { params: { query: { limit: PAGE, offset } } })),
  });
  const create = async (event: React.FormEvent) => {
    event.preventDefault();
    setError(null);
    const { data, error: refused } = await api.POST("/v1/users", { body: { email: email || null, role, key_name: "default" } });
    if (refused || !data) return setError(errorMessage(refused));
    setCreated({ user: data.user.user_id, key: data.api_key.api_key });
    setEmail("");
    await queries.invalidateQueries({ queryKey: ["admin-users"] });
  };
  const total = users.data?.total ?? 0;
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
      {status && <p role="status" className="text-sm text-green-800">{status}</p>}
      {users.isError && <p role="alert" className="text-sm text-red-700">{errorMessage(users.error)}</p>}
      <table className="w-full bg-white text-sm">
        <thead>
          <tr className="text-left">
            <th className="p-2">User</th><th className="p-2">Email</th><th className="p-2">Role</th><th className="p-2">Created</th><th className="p-2">Verified</th><th className="p-2">Quotas and share weight</th><th className="p-2">Spending caps</th><th className="p-2">Grant credits</th>
          </tr>
        </thead>
        <tbody>
          {users.data?.users.map((user) => (
            <tr key={user.user_id} className="border-t border-slate-100" data-testid="user-row">
              <td className="p-2 font-mono">{user.user_id}</td>
              <td className="p-2">{user.email ?? "—"}</td>
              <td className="p-2">{user.role}</td>
              <td className="p-2">{when(user.created_at)}</td>
              <td className="p-2">{user.verified_at ? when(user.verified_at) : "no"}</td>
              <td className="p-2"><UserLimits user={user} onSaved={setStatus} /></td>
              <td className="p-2"><UserSpendingCaps user={user} onSaved={setStatus} /></td>
              <td className="p-2"><GrantForm user={user} onGranted={setStatus} /></td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="flex items-center gap-2 text-sm">
        <span data-testid="users-total">{count(total, "user")}</span>
        <button type="button" className="rounded border border-slate-400 px-2 py-1 disabled:opacity-50" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>Previous</button>
        <button type="button" className="rounded border border-slate-400 px-2 py-1 disabled:opacity-50" disabled={offset + PAGE >= total} onClick={() => setOffset(offset + PAGE)}>Next</button>
      </div>
    </div>
  );
}
