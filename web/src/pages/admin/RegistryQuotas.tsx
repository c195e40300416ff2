import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, errorMessage, type Schemas, unwrap } from "../../api/client";
import { Card } from "../../components/Layout";

const GB = 1_000_000_000;

/** Bytes in the largest decimal unit that keeps the number at least 1 (B, KB, MB, GB, TB). */
export function size(bytes: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(2)} ${units[unit]}`;
}

export const QUOTAS_PAGE = 50;
type Usage = Schemas["RegistryUsageResponse"];

/** One user's usage of its quota as a bar (red once over). */
function UsageBar({ usage, label }: { usage: Usage; label: string }) {
  const over = usage.usage_bytes > usage.quota_bytes;
  return (
    <div role="meter" aria-label={label} aria-valuemin={0} aria-valuemax={usage.quota_bytes} aria-valuenow={usage.usage_bytes} className="mt-1 h-3 w-full overflow-hidden rounded bg-slate-200">
      <div className={`h-full ${over ? "bg-red-700" : "bg-blue-800"}`} style={{ width: `${Math.min(100, (usage.usage_bytes / Math.max(1, usage.quota_bytes)) * 100)}%` }} />
    </div>
  );
}

/** Every user's usage and quota, most used first, a page at a time; Edit opens one below. */
function EveryUser({ names, onEdit }: { names: Map<string, string>; onEdit: (usage: Usage) => void }) {
  const [offset, setOffset] = useState(0);
  const page = useQuery({
    queryKey: ["registry-quotas", offset],
    queryFn: async () => unwrap(await api.GET("/v1/admin/registry-quotas", { params: { query: { limit: QUOTAS_PAGE, offset } } })),
    placeholderData: keepPreviousData,
    refetchInterval: 30_000,
  });
  const total = page.data?.total ?? 0;
  return (
    <Card title="Every user, most used first">
      {page.isError && <p role="alert" className="text-sm text-red-700">{errorMessage(page.error)}</p>}
      <table className="w-full text-sm">
        <thead>
          <tr className="text-left"><th className="p-1">User</th><th className="w-1/3 p-1">Usage</th><th className="p-1">Used of quota</th><th className="p-1">Blobs</th><th className="p-1"><span className="sr-only">Actions</span></th></tr>
        </thead>
        <tbody>
          {page.data?.users.map((usage) => {
            const who = names.get(usage.user_id) ?? usage.user_id;
            return (
              <tr key={usage.user_id} className="border-t border-slate-100" data-testid="quota-row">
                <td className="p-1">{who}</td>
                <td className="p-1"><UsageBar usage={usage} label={`Storage used by ${who}`} /></td>
                <td className={`p-1 ${usage.usage_bytes > usage.quota_bytes ? "font-medium text-red-700" : ""}`}>
                  {size(usage.usage_bytes)} of {size(usage.quota_bytes)}{usage.quota_is_default ? " (default)" : ""}
                </td>
                <td className="p-1">{usage.blobs}</td>
                <td className="p-1"><button type="button" className="text-blue-800 underline" onClick={() => onEdit(usage)} aria-label={`Edit the quota of ${who}`}>Edit</button></td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <div className="mt-2 flex items-center gap-2 text-sm">
        <span>{total} users</span>
        <button type="button" className="rounded border border-slate-400 px-2 py-0.5 disabled:opacity-40" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - QUOTAS_PAGE))}>Previous</button>
        <button type="button" className="rounded border border-slate-400 px-2 py-0.5 disabled:opacity-40" disabled={offset + QUOTAS_PAGE >= total} onClick={() => setOffset(offset + QUOTAS_PAGE)}>Next</button>
      </div>
    </Card>
  );
}

export function RegistryQuotas() {
  const queries = useQueryClient();
  const [userId, setUserId] = useState("");
  const [usage, setUsage] = useState<Schemas["RegistryUsageResponse"] | null>(null);
  const [quotaGb, setQuotaGb] = useState("");
  const [message, setMessage] = useState<string | null>(null);
  // the users to pick from (by email); any user id may still be typed
  const users = useQuery({
    queryKey: ["admin-users", "registry"],
    queryFn: async () => unwrap(await api.GET("/v1/admin/users", { params: { query: { limit: 500 } } })),
  });
  const names = new Map((users.data?.users ?? []).map((user) => [user.user_id, user.email ?? user.user_id]));
  const edit = (picked: Usage) => {
    setMessage(null);
    setUserId(picked.user_id);
    setUsage(picked);
    setQuotaGb(String(picked.quota_bytes / GB));
  };
  const load = async (event: React.FormEvent) => {
    event.preventDefault();
    setMessage(null);
    const { data, error } = await api.GET("/v1/admin/users/{user_id}/registry-quota", { params: { path: { user_id: userId.trim() } } });
    if (error || !data) return setMessage(errorMessage(error));
    setUsage(data);
    setQuotaGb(String(data.quota_bytes / GB));
  };
  const save = async (event: React.FormEvent) => {
    event.preventDefault();
    if (!usage) return;
    const { data, error } = await api.PUT("/v1/admin/users/{user_id}/registry-quota", {
      params: { path: { user_id: usage.user_id } },
      body: { quota_bytes: Math.round(Number(quotaGb) * GB) },
    });
    if (error || !data) return setMessage(errorMessage(error));
    setUsage(data);
    setMessage("Quota saved: in force from the next push");
    await queries.invalidateQueries({ queryKey: ["registry-quotas"] });
  };
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Registry quotas</h1>
      <EveryUser names={names} onEdit={edit} />
      <form onSubmit={load} className="flex items-end gap-2 text-sm">
        <label className="flex flex-col">
          User id
          <input className="rounded border border-slate-400 px-2 py-1" list="registry-users" value={userId} onChange={(e) => setUserId(e.target.value)} required />
        </label>
        <datalist id="registry-users">
          {users.data?.users.map((user) => <option key={user.user_id} value={user.user_id}>{user.email ?? user.user_id}</option>)}
        </datalist>
        <button type="submit" className="rounded bg-slate-900 px-3 py-1.5 text-white">Show</button>
      </form>
      {message && <p role="status" className="text-sm">{message}</p>}
      {usage && (
        <Card title={`${usage.user_id}${usage.quota_is_default ? " (default quota)" : ""}`}>
          <p className="text-sm">{size(usage.usage_bytes)} of {size(usage.quota_bytes)} in {usage.blobs} blobs</p>
          {usage.usage_bytes >= usage.quota_bytes && (
            <p role="alert" data-testid="over-quota" className="text-sm font-medium text-red-700">
              {usage.usage_bytes > usage.quota_bytes ? `Over quota by ${size(usage.usage_bytes - usage.quota_bytes)}` : "At the quota"}: pushes are refused until images are deleted or the quota is raised
            </p>
          )}
          <UsageBar usage={usage} label="Registry usage" />
          <form onSubmit={save} className="mt-3 flex items-end gap-2 text-sm">
            <label className="flex flex-col">
              Quota (GB)
              <input className="rounded border border-slate-400 px-2 py-1" type="number" min="0" step="0.001" value={quotaGb} onChange={(e) => setQuotaGb(e.target.value)} />
            </label>
            <button type="submit" className="rounded bg-slate-900 px-3 py-1.5 text-white">Save</button>
          </form>
        </Card>
      )}
    </div>
  );
}
