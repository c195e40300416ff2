import { useQuery } from "@tanstack/react-query";
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

export function RegistryQuotas() {
  const [userId, setUserId] = useState("");
  const [usage, setUsage] = useState<Schemas["RegistryUsageResponse"] | null>(null);
  const [quotaGb, setQuotaGb] = useState("");
  const [message, setMessage] = useState<string | null>(null);
  // the users to pick from (by email); any user id may still be typed
  const users = useQuery({
    queryKey: ["admin-users", "registry"],
    queryFn: async () => unwrap(await api.GET("/v1/admin/users", { params: { query: { limit: 500 } } })),
  });
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
  };
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Registry quotas</h1>
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
          <div role="meter" aria-label="Registry usage" aria-valuemin={0} aria-valuemax={usage.quota_bytes} aria-valuenow={usage.usage_bytes} className="mt-1 h-3 w-full overflow-hidden rounded bg-slate-200">
            <div className={`h-full ${usage.usage_bytes > usage.quota_bytes ? "bg-red-700" : "bg-blue-800"}`} style={{ width: `${Math.min(100, (usage.usage_bytes / Math.max(1, usage.quota_bytes)) * 100)}%` }} />
          </div>
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
