import * as Dialog from "@radix-ui/react-dialog";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, errorMessage, unwrap, when } from "../api/client";

export function Keys() {
  const queries = useQueryClient();
  const [name, setName] = useState("");
  const [shown, setShown] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const keys = useQuery({ queryKey: ["keys"], queryFn: async () => unwrap(await api.GET("/v1/keys")) });
  const create = async (event: React.FormEvent) => {
    event.preventDefault();
    setError(null);
    const { data, error: refused } = await api.POST("/v1/keys", { body: { name: name || "default" } });
    if (refused || !data) return setError(errorMessage(refused));
    setShown(data.api_key);
    setName("");
    await queries.invalidateQueries({ queryKey: ["keys"] });
  };
  const revoke = async (keyId: string) => {
    if (!window.confirm(`Revoke ${keyId}? Programs using it stop working at once.`)) return;
    const { error: refused } = await api.DELETE("/v1/keys/{key_id}", { params: { path: { key_id: keyId } } });
    if (refused) setError(errorMessage(refused));
    await queries.invalidateQueries({ queryKey: ["keys"] });
  };
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">API keys</h1>
      <form onSubmit={create} className="flex items-end gap-2 text-sm">
        <label className="flex flex-col">
          Name
          <input className="rounded border border-slate-400 px-2 py-1" value={name} maxLength={100} onChange={(e) => setName(e.target.value)} placeholder="laptop" />
        </label>
        <button type="submit" className="rounded bg-slate-900 px-3 py-1.5 text-white">Create key</button>
      </form>
      {error && <p role="alert" className="text-sm text-red-700">{error}</p>}
      <Dialog.Root open={shown !== null} onOpenChange={(open) => !open && setShown(null)}>
        <Dialog.Portal>
          <Dialog.Overlay className="fixed inset-0 bg-black/40" />
          <Dialog.Content className="fixed left-1/2 top-1/3 w-[32rem] -translate-x-1/2 rounded-lg bg-white p-6 shadow-xl">
            <Dialog.Title className="text-lg font-semibold">Your new API key</Dialog.Title>
            <Dialog.Description className="mt-1 text-sm text-slate-700">Copy it now: it is shown this once.</Dialog.Description>
            <code data-testid="new-key" className="mt-3 block break-all rounded bg-slate-100 p-2 text-sm">{shown}</code>
            <div className="mt-4 flex gap-2">
              <button type="button" className="rounded border border-slate-400 px-3 py-1" onClick={() => shown && navigator.clipboard?.writeText(shown)}>Copy</button>
              <Dialog.Close className="rounded bg-slate-900 px-3 py-1 text-white">Done</Dialog.Close>
            </div>
          </Dialog.Content>
        </Dialog.Portal>
      </Dialog.Root>
      <table className="w-full bg-white text-sm">
        <thead>
          <tr className="text-left"><th className="p-2">Name</th><th className="p-2">Prefix</th><th className="p-2">Created</th><th className="p-2">Last used</th><th className="p-2">State</th><th className="p-2"><span className="sr-only">Actions</span></th></tr>
        </thead>
        <tbody>
          {keys.data?.keys.map((key) => (
            <tr key={key.key_id} className="border-t border-slate-100" data-testid="key-row">
              <td className="p-2">{key.name}</td>
              <td className="p-2 font-mono">{key.prefix}</td>
              <td className="p-2">{when(key.created_at)}</td>
              <td className="p-2">{key.last_used_at ? when(key.last_used_at) : "never"}</td>
              <td className="p-2">{key.revoked_at ? `revoked ${when(key.revoked_at)}` : "active"}</td>
              <td className="p-2">
                {!key.revoked_at && <button type="button" className="text-red-800 underline" onClick={() => revoke(key.key_id)}>Revoke</button>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
