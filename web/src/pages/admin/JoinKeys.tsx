import * as Dialog from "@radix-ui/react-dialog";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, errorMessage, type Schemas, unwrap, when } from "../../api/client";

type NewJoinKey = Schemas["NewJoinKeyResponse"];
type JoinKey = Schemas["JoinKeyResponse"];

const HOUR = 3600;

/** What a key is now: revoked, expired, used up, or usable. */
export function joinKeyState(key: JoinKey, now: Date = new Date()): string {
  if (key.revoked_at) return "revoked";
  if (new Date(key.expires_at) <= now) return "expired";
  if (key.uses >= key.max_uses) return "used up";
  return "usable";
}

function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await navigator.clipboard.writeText(text);
    setCopied(true);
  };
  return (
    <button type="button" className="rounded border border-slate-400 px-3 py-1 text-sm" onClick={copy} aria-label={label}>
      {copied ? "Copied" : "Copy"}
    </button>
  );
}

export function JoinKeys() {
  const queries = useQueryClient();
  const [description, setDescription] = useState("");
  const [hours, setHours] = useState("24");
  const [maxUses, setMaxUses] = useState("1");
  const [maxGpus, setMaxGpus] = useState("");
  const [vendor, setVendor] = useState<"" | "nvidia" | "amd">("");
  const [created, setCreated] = useState<NewJoinKey | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const keys = useQuery({ queryKey: ["join-keys"], queryFn: async () => unwrap(await api.GET("/v1/admin/join-keys")) });

  const create = async (event: React.FormEvent) => {
    event.preventDefault();
    if (busy) return;
    setError(null);
    setBusy(true);
    const { data, error: refused } = await api.POST("/v1/admin/join-keys", {
      body: {
        description,
        ttl_seconds: Math.round(Number(hours) * HOUR),
        max_uses: Number(maxUses),
        max_gpus: maxGpus === "" ? null : Number(maxGpus),
        vendor: vendor === "" ? null : vendor,
      },
    });
    setBusy(false);
    if (refused || !data) return setError(errorMessage(refused));
    setCreated(data);
    setDescription("");
    await queries.invalidateQueries({ queryKey: ["join-keys"] });
  };

  const revoke = async (key: JoinKey) => {
    if (!window.confirm(`Revoke ${key.id}? No machine joins with it any more; joined nodes stay.`)) return;
    const { error: refused } = await api.DELETE("/v1/admin/join-keys/{key_id}", { params: { path: { key_id: key.id } } });
    if (refused) setError(errorMessage(refused));
    await queries.invalidateQueries({ queryKey: ["join-keys"] });
  };

  const input = "rounded border border-slate-400 px-2 py-1";
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Join keys</h1>
      <form onSubmit={create} className="flex flex-wrap items-end gap-2 text-sm">
        <label className="flex flex-col">
          Description
          <input className={input} value={description} maxLength={200} onChange={(e) => setDescription(e.target.value)} placeholder="rack 4" />
        </label>
        <label className="flex flex-col">
          Expires in (hours)
          <input className={`${input} w-28`} type="number" min="0.017" max="2160" step="any" required value={hours} onChange={(e) => setHours(e.target.value)} />
        </label>
        <label className="flex flex-col">
          Uses
          <input className={`${input} w-24`} type="number" min="1" max="10000" required value={maxUses} onChange={(e) => setMaxUses(e.target.value)} />
        </label>
        <label className="flex flex-col">
          GPUs per node (most)
          <input className={`${input} w-28`} type="number" min="1" max="64" value={maxGpus} onChange={(e) => setMaxGpus(e.target.value)} placeholder="any" />
        </label>
        <label className="flex flex-col">
          Vendor
          <select className={input} value={vendor} onChange={(e) => setVendor(e.target.value as "" | "nvidia" | "amd")}>
            <option value="">any</option>
            <option value="nvidia">nvidia</option>
            <option value="amd">amd</option>
          </select>
        </label>
        <button type="submit" disabled={busy} className="rounded bg-slate-900 px-3 py-1.5 text-white disabled:opacity-60">Create join key</button>
      </form>
      {error && <p role="alert" className="text-sm text-red-700">{error}</p>}
      {keys.isError && <p role="alert" className="text-sm text-red-700">{errorMessage(keys.error)}</p>}

      <Dialog.Root open={created !== null} onOpenChange={(open) => !open && setCreated(null)}>
        <Dialog.Portal>
          <Dialog.Overlay className="fixed inset-0 bg-black/40" />
          <Dialog.Content className="fixed left-1/2 top-1/4 w-[40rem] -translate-x-1/2 rounded-lg bg-white p-6 shadow-xl">
            <Dialog.Title className="text-lg font-semibold">Join key {created?.id}</Dialog.Title>
            <Dialog.Description className="mt-1 text-sm text-slate-700">
              Run this as root on the machine that joins. The key is shown this once.
            </Dialog.Description>
            <code data-testid="join-command" className="mt-3 block break-all rounded bg-slate-100 p-2 text-sm">{created?.join_command}</code>
            <div className="mt-4 flex gap-2">
              {created && <CopyButton text={created.join_command} label="Copy the join command" />}
              <Dialog.Close className="rounded bg-slate-900 px-3 py-1 text-sm text-white">Done</Dialog.Close>
            </div>
          </Dialog.Content>
        </Dialog.Portal>
      </Dialog.Root>

      <table className="w-full bg-white text-sm">
        <thead>
          <tr className="text-left">
            <th className="p-2">Key</th><th className="p-2">Description</th><th className="p-2">Created</th><th className="p-2">Expires</th>
            <th className="p-2">Uses</th><th className="p-2">Limits</th><th className="p-2">State</th><th className="p-2"><span className="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {keys.data?.join_keys.map((key) => {
            const state = joinKeyState(key);
            return (
              <tr key={key.id} className="border-t border-slate-100" data-testid="join-key-row">
                <td className="p-2 font-mono">{key.id}</td>
                <td className="p-2">{key.description || "—"}</td>
                <td className="p-2">{when(key.created_at)}</td>
                <td className="p-2">{when(key.expires_at)}</td>
                <td className="p-2">{key.uses} of {key.max_uses}</td>
                <td className="p-2">{[key.max_gpus ? `≤ ${key.max_gpus} GPUs` : null, key.vendor].filter(Boolean).join(", ") || "none"}</td>
                <td className={`p-2 ${state === "usable" ? "text-green-800" : "text-slate-700"}`}>{state}</td>
                <td className="p-2">
                  {!key.revoked_at && <button type="button" className="text-red-800 underline" onClick={() => revoke(key)} aria-label={`Revoke ${key.id}`}>Revoke</button>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {keys.data?.join_keys.length === 0 && <p className="text-sm text-slate-700">No join keys yet.</p>}
    </div>
  );
}
