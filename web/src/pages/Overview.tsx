import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, credits, unwrap } from "../api/client";
import { Card, PhaseBadge } from "../components/Layout";

const DAY_MS = 24 * 3600 * 1000;

export function Overview() {
  const balance = useQuery({
    queryKey: ["credits"],
    queryFn: async () => unwrap(await api.GET("/v1/credits")),
    refetchInterval: 10_000,
  });
  const spent = useQuery({
    queryKey: ["usage", "last-day"],
    queryFn: async () =>
      unwrap(await api.GET("/v1/usage", { params: { query: { from: new Date(Date.now() - DAY_MS).toISOString(), limit: 1 } } })),
    refetchInterval: 30_000,
  });
  const running = useQuery({
    queryKey: ["jobs", "running"],
    queryFn: async () => unwrap(await api.GET("/v1/jobs", { params: { query: { limit: 10, phase: ["Running", "Allocated"] } } })),
    refetchInterval: 5_000,
  });
  const endpoints = useQuery({
    queryKey: ["endpoints"],
    queryFn: async () => unwrap(await api.GET("/v1/endpoints")),
    refetchInterval: 10_000,
  });
  const perHour = spent.data ? spent.data.totals.cost / 24 : undefined;
  const serving = endpoints.data?.endpoints.filter((endpoint) => endpoint.phase === "Running") ?? [];
  // what the running endpoints' replicas cost now, per hour (micro-credits)
  const endpointsPerHour = serving.reduce((sum, endpoint) => sum + (endpoint.price_per_second ?? 0) * endpoint.ready_replicas * 3600, 0);
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Overview</h1>
      <div className="grid grid-cols-1 gap-4 md:grid-cols-5">
        <Card title="Balance">
          <p className="text-2xl" data-testid="balance">{balance.data ? credits(balance.data.balance) : "…"}</p>
        </Card>
        <Card title="Available">
          <p className="text-2xl">{balance.data ? credits(balance.data.available) : "…"}</p>
          <p className="text-xs text-slate-600">{balance.data ? `${credits(balance.data.held)} held` : ""}</p>
        </Card>
        <Card title="Burn rate (last 24 h)">
          <p className="text-2xl" data-testid="burn-rate">{perHour === undefined ? "…" : `${credits(Math.round(perHour))} / h`}</p>
        </Card>
        <Card title="Running jobs">
          <p className="text-2xl" data-testid="running-jobs">{running.data?.total ?? "…"}</p>
        </Card>
        <Card title="Endpoints">
          <p className="text-2xl" data-testid="running-endpoints">{endpoints.data ? `${serving.length} running` : "…"}</p>
          <p className="text-xs text-slate-600">{endpoints.data ? `of ${endpoints.data.endpoints.length}; ${credits(Math.round(endpointsPerHour))} / h now` : ""}</p>
        </Card>
      </div>
      <Card title="Running now">
        {running.data && running.data.jobs.length === 0 && <p className="text-sm text-slate-600">Nothing is running.</p>}
        <ul className="divide-y divide-slate-100">
          {running.data?.jobs.map((job) => (
            <li key={job.job_id} className="flex items-center gap-3 py-2 text-sm">
              <PhaseBadge phase={job.phase} />
              <Link className="font-mono text-blue-800 underline" to={`/jobs/${job.job_id}`}>{job.job_id}</Link>
              <span>{job.function_name}</span>
              <span className="text-slate-600">{job.node ?? ""} {job.gpu_indices.length ? `GPU ${job.gpu_indices.join(",")}` : ""}</span>
            </li>
          ))}
        </ul>
      </Card>
      <Card title="Endpoints">
        {endpoints.data && endpoints.data.endpoints.length === 0 && <p className="text-sm text-slate-600">No endpoints.</p>}
        <ul className="divide-y divide-slate-100">
          {endpoints.data?.endpoints.map((endpoint) => (
            <li key={endpoint.endpoint_id} className="flex items-center gap-3 py-2 text-sm" data-testid="overview-endpoint">
              <PhaseBadge phase={endpoint.phase} />
              <Link className="font-mono text-blue-800 underline" to={`/endpoints/${encodeURIComponent(endpoint.name)}`}>{endpoint.name}</Link>
              <span>{endpoint.model ?? endpoint.mode}</span>
              <span className="text-slate-600">{endpoint.ready_replicas} ready · {endpoint.health}</span>
            </li>
          ))}
        </ul>
      </Card>
    </div>
  );
}
