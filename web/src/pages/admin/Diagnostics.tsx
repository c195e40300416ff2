import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";
import { Card } from "../../components/Layout";
import { TimeSeriesChart } from "../../components/TimeSeriesChart";

type Service = { name: string; url: string; healthy: boolean; status: string; figures: Record<string, number>; metrics: string };

/** Samples that are no amount to add up: a counter's or histogram's creation time
 * (``_created``, seconds since 1970), a histogram's cumulative buckets, a summary's quantiles. */
function notAnAmount(name: string, labels: string | undefined): boolean {
  return name.endsWith("_created") || name.endsWith("_bucket") || /(^|[{,])\s*quantile=/.test(labels ?? "");
}

/** The Prometheus samples whose names start with one of ``prefixes``, summed per name (over
 * their labels), leaving out what is no amount (see {@link notAnAmount}). */
export function keyFigures(text: string, prefixes: string[]): Record<string, number> {
  const figures: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match || !prefixes.some((prefix) => match[1]!.startsWith(prefix))) continue;
    if (notAnAmount(match[1]!, match[2])) continue;
    const value = Number(match[3]);
    if (Number.isFinite(value)) figures[match[1]!] = (figures[match[1]!] ?? 0) + value;
  }
  return figures;
}

const KEY_PREFIXES = ["http_requests_total", "http_request_duration_seconds_count", "process_resident_memory_bytes", "process_cpu_seconds_total", "gridweave_"];

/** The console's window: the last hour, read again every 15 s. */
const CHART_MINUTES = 60;

/** Request rate, errors and latency per service, the gateway's queue and placements, GPU memory
 * and utilization per node and GPU: the platform's named queries of its Prometheus. */
function Charts() {
  const charts = useQuery({
    queryKey: ["console-charts", CHART_MINUTES],
    queryFn: async () => unwrap(await api.GET("/v1/admin/console/charts", { params: { query: { minutes: CHART_MINUTES } } })),
    refetchInterval: 15_000,
  });
  if (charts.isError) {
    return (
      <p role="alert" className="text-sm text-red-700">
        No charts: {charts.error.message}
      </p>
    );
  }
  if (!charts.data) return <p className="text-sm text-slate-600">Loading charts…</p>;
  const { prometheus_url: url, start, end } = charts.data;
  return (
    <>
      <p className="text-sm">
        From the Prometheus at{" "}
        <a className="font-mono text-blue-800 underline" href={url}>
          {url}
        </a>{" "}
        (for Grafana: add it as a Prometheus data source).
      </p>
      <div className="grid gap-3 md:grid-cols-2">
        {charts.data.charts.map((chart) => (
          <TimeSeriesChart key={chart.name} title={chart.title} unit={chart.unit} series={chart.series} start={start} end={end} />
        ))}
      </div>
    </>
  );
}

export function Diagnostics() {
  const services = useQuery({
    queryKey: ["diagnostics"],
    queryFn: async () => {
      const response = await fetch("/-/diagnostics", { credentials: "same-origin" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      return (await response.json()) as { services: Service[] };
    },
    refetchInterval: 15_000,
  });
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Diagnostics</h1>
      <h2 className="text-lg font-medium">The last hour</h2>
      <Charts />
      <h2 className="text-lg font-medium">Services</h2>
      {services.isError && <p role="alert" className="text-red-700">{String(services.error)}</p>}
      {services.data?.services.map((service) => {
        const figures = keyFigures(service.metrics, KEY_PREFIXES);
        return (
          <Card key={service.name} title={service.name}>
            <p className={`text-sm font-medium ${service.healthy ? "text-green-800" : "text-red-700"}`}>{service.healthy ? "healthy" : `unhealthy: ${service.status}`}</p>
            <dl className="mt-2 grid grid-cols-2 gap-x-4 text-xs">
              {Object.entries(figures).slice(0, 12).map(([name, value]) => (
                <div key={name} className="contents"><dt className="font-mono">{name}</dt><dd>{value.toLocaleString("en-US")}</dd></div>
              ))}
            </dl>
            <details className="mt-2 text-xs">
              <summary>Raw /metrics</summary>
              <pre className="max-h-64 overflow-auto bg-slate-100 p-2">{service.metrics}</pre>
            </details>
          </Card>
        );
      })}
    </div>
  );
}
