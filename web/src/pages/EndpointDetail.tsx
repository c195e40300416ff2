import { useQuery } from "@tanstack/react-query";
import { Link, useParams } from "react-router";
import { api, credits, errorMessage, mib, type Schemas, unwrap, when } from "../api/client";
import { Card, PhaseBadge } from "../components/Layout";

/** Milliseconds, rounded for reading ("—" when there is no figure yet). */
export function millis(value: number | null | undefined): string {
  if (value == null) return "—";
  if (value >= 10_000) return `${(value / 1000).toFixed(1)} s`;
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`;
}

function Figure({ label, value, testId }: { label: string; value: string | number; testId?: string }) {
  return (
    <div>
      <dt className="text-xs text-slate-600">{label}</dt>
      <dd className="text-xl" data-testid={testId}>{value}</dd>
    </div>
  );
}

/** The most lines of each replica's stdout and stderr the page asks for. */
export const LOG_LINES = 200;

/** Its price per second and replica; before an endpoint of any vendor runs, the most it may cost. */
export function endpointPrice(endpoint: Pick<Schemas["EndpointResponse"], "price_per_second" | "max_price_per_second">): string {
  if (endpoint.price_per_second != null) return `${credits(endpoint.price_per_second)} / s per replica`;
  if (endpoint.max_price_per_second != null) {
    return `up to ${credits(endpoint.max_price_per_second)} / s per replica (the price of the GPUs it is placed on)`;
  }
  return "unknown";
}

function ReplicaSection({ replica }: { replica: Schemas["ReplicaLog"] }) {
  return (
    <section aria-label={`Replica ${replica.replica}`} data-testid="replica-log" className="space-y-1">
      <h3 className="text-sm font-medium">
        Replica <code>{replica.replica}</code> · {replica.state === "ALIVE" ? "running" : replica.state.toLowerCase()} · started {when(replica.started_at)}
      </h3>
      {replica.error && <p className="text-sm text-red-700">Its logs could not be read: {replica.error}</p>}
      {(replica.streams ?? []).map((stream) => (
        <div key={stream.stream}>
          <p className="text-xs text-slate-600">
            {stream.stream}{stream.truncated ? ` (the last ${stream.lines.length} lines; older ones left out)` : ""}
          </p>
          {/* the replica's own output: plain text, never markup */}
          <pre
            tabIndex={0}
            aria-label={`${stream.stream} of replica ${replica.replica}`}
            data-testid={`replica-${stream.stream}`}
            className={`max-h-72 overflow-auto whitespace-pre-wrap break-all rounded bg-slate-900 p-3 font-mono text-xs ${stream.stream === "stderr" ? "text-amber-200" : "text-slate-100"}`}
          >
            {stream.lines.length ? stream.lines.join("\n") : "(empty)"}
          </pre>
        </div>
      ))}
    </section>
  );
}

function ReplicaLogs({ name }: { name: string }) {
  const logs = useQuery({
    queryKey: ["endpoint-logs", name],
    queryFn: async () =>
      unwrap(await api.GET("/v1/endpoints/{name}/-/logs", { params: { path: { name }, query: { lines: LOG_LINES } } })),
    refetchInterval: 5_000,
  });
  return (
    <Card title="Replica logs">
      <div className="mb-2 flex items-center gap-3 text-xs text-slate-600">
        <span>The last {LOG_LINES} lines of each replica&apos;s stdout and stderr, running replicas first; read again every 5 s while this tab is open.</span>
        <button
          type="button"
          onClick={() => void logs.refetch()}
          disabled={logs.isFetching}
          className="rounded border border-slate-300 px-2 py-0.5 text-slate-800 hover:bg-slate-50 disabled:opacity-60"
        >
          {logs.isFetching ? "Refreshing…" : "Refresh"}
        </button>
        {logs.dataUpdatedAt > 0 && <span data-testid="logs-read-at">Read {new Date(logs.dataUpdatedAt).toLocaleTimeString()}</span>}
      </div>
      {logs.isError && <p role="alert" className="text-sm text-red-700">{errorMessage(logs.error)}</p>}
      <div data-testid="endpoint-logs" className="space-y-3">
        {logs.data && logs.data.replicas.length === 0 && (
          <p className="text-sm">No replica logs{logs.data.message ? `: ${logs.data.message}` : "."}</p>
        )}
        {logs.data?.replicas.map((replica) => <ReplicaSection key={replica.replica} replica={replica} />)}
      </div>
    </Card>
  );
}

export function EndpointDetail() {
  const { name = "" } = useParams();
  const endpoint = useQuery({
    queryKey: ["endpoint", name],
    queryFn: async () => unwrap(await api.GET("/v1/endpoints/{name}", { params: { path: { name } } })),
    refetchInterval: 5_000,
  });
  const stats = useQuery({
    queryKey: ["endpoint-stats", name],
    enabled: endpoint.isSuccess,
    queryFn: async () => unwrap(await api.GET("/v1/endpoints/{name}/-/stats", { params: { path: { name } } })),
    refetchInterval: 5_000,
  });
  if (endpoint.isError) {
    return (
      <div className="space-y-2">
        <p role="alert" className="text-red-700">{errorMessage(endpoint.error)}</p>
        <Link className="text-blue-800 underline" to="/endpoints">All endpoints</Link>
      </div>
    );
  }
  if (!endpoint.data) return <p>Loading…</p>;
  const data = endpoint.data;
  const figures = stats.data;
  return (
    <div className="space-y-4">
      <div className="flex items-center gap-3">
        <h1 className="font-mono text-xl font-semibold">{data.name}</h1>
        <PhaseBadge phase={data.phase} />
        <span data-testid="endpoint-health" className={`rounded px-2 py-0.5 text-xs font-medium ${data.health === "Healthy" ? "bg-green-100 text-green-900" : data.health === "Unhealthy" ? "bg-red-100 text-red-900" : "bg-slate-100 text-slate-800"}`}>
          {data.health}
        </span>
      </div>
      {data.reason && <p className="text-sm">{data.reason}{data.message ? `: ${data.message}` : ""}</p>}
      {data.waking_reason && (
        <p className="text-sm" data-testid="endpoint-waking">
          Waking, waits for a GPU ({data.waking_reason}){data.waking_message ? `: ${data.waking_message}` : ""}
        </p>
      )}
      <div className="grid grid-cols-1 gap-4 md:grid-cols-3">
        <Card title="Replicas">
          <p className="text-2xl" data-testid="endpoint-replicas">{data.ready_replicas} ready</p>
          <p className="text-sm text-slate-600">Scales {data.min_replicas}–{data.max_replicas}; to zero after {data.idle_seconds} s idle{data.idle_seconds === 0 ? " (never)" : ""}</p>
        </Card>
        <Card title="Placement">
          <p className="text-sm">Model: {data.model ?? data.mode}</p>
          <p className="text-sm">Node: {data.node ?? "—"}</p>
          <p className="text-sm">GPUs: {data.gpu_indices.length ? data.gpu_indices.join(", ") : "—"} ({data.gpu_count} × {mib(data.vram_mb)}, {data.vendor})</p>
          <p className="text-sm">Call it at <code className="break-all">{data.path}</code></p>
        </Card>
        <Card title="Cost">
          <p className="text-sm">Billed seconds: {data.billed_seconds}</p>
          <p className="text-sm">Price: {endpointPrice(data)}</p>
          <p className="text-sm">Started: {when(data.started_at)}</p>
          {data.stopped_at && <p className="text-sm">Stopped: {when(data.stopped_at)}</p>}
        </Card>
      </div>
      <Card title="Requests through the platform">
        {stats.isError && <p role="alert" className="text-red-700">{errorMessage(stats.error)}</p>}
        <dl className="grid grid-cols-2 gap-4 md:grid-cols-4">
          <Figure label="Requests" value={figures?.requests ?? "…"} testId="stat-requests" />
          <Figure label="OK (1xx–3xx)" value={figures?.ok ?? "…"} />
          <Figure label="Client errors (4xx)" value={figures?.client_errors ?? "…"} />
          <Figure label="Server errors (5xx) / no answer" value={figures ? `${figures.server_errors} / ${figures.unreachable}` : "…"} testId="stat-errors" />
          <Figure label="Latency p50" value={millis(figures?.latency_p50_ms)} testId="stat-p50" />
          <Figure label="Latency p90" value={millis(figures?.latency_p90_ms)} testId="stat-p90" />
          <Figure label="Latency p99" value={millis(figures?.latency_p99_ms)} testId="stat-p99" />
          <Figure label="Cold starts (wakes)" value={figures ? `${figures.cold_starts}${figures.last_cold_start_ms != null ? `, last ${millis(figures.last_cold_start_ms)}` : ""}` : "…"} testId="stat-cold-starts" />
        </dl>
        {figures && (
          <p className="mt-3 text-xs text-slate-600">
            Counted since {when(figures.since)} by the platform process started {when(figures.process_started_at)}; the figures are kept in memory and start again when the platform restarts.
            Latency is to the endpoint&apos;s response headers, wakes included, over the last {figures.latency_samples} calls.
            Last request: {when(figures.last_request_at)}.
          </p>
        )}
      </Card>
      <ReplicaLogs name={data.name} />
      <Link className="text-sm text-blue-800 underline" to="/endpoints">All endpoints</Link>
    </div>
  );
}
