import { screen, within } from "@testing-library/react";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import { renderApp } from "../../test/render";
import { ME, server } from "../../test/server";

const ADMIN = { ...ME, role: "admin" as const };
const METRICS = [
  "# HELP http_requests_total Requests.",
  "# TYPE http_requests_total counter",
  'http_requests_total{route="/v1/jobs",status="200"} 40',
  'http_requests_total{route="/v1/me",status="200"} 2',
  'http_requests_created{route="/v1/jobs",status="200"} 1.7649e+09',
  "process_resident_memory_bytes 1.5e+08",
  "python_gc_objects_collected_total 7",
  "# TYPE gridweave_placement_seconds histogram",
  'gridweave_placement_seconds_bucket{le="0.1"} 3',
  'gridweave_placement_seconds_bucket{le="+Inf"} 5',
  "gridweave_placement_seconds_count 5",
  "gridweave_placement_seconds_sum 0.75",
  "gridweave_placement_seconds_created 1.7649e+09",
  "# TYPE gridweave_call_seconds summary",
  'gridweave_call_seconds{quantile="0.5"} 0.2',
  "gridweave_call_seconds_count 4",
].join("\n");

const NOW = 1_780_000_000;
const PROMETHEUS = "http://127.0.0.1:8700";

/** A chart answer of GET /v1/admin/console/charts: ``series`` as [labels, values] pairs, each
 * value a minute apart, ending now. */
function chart(name: string, title: string, unit: string, series: [Record<string, string>, number[]][]) {
  return {
    name,
    title,
    unit,
    series: series.map(([labels, values]) => ({ labels, points: values.map((value, index) => [NOW - (values.length - 1 - index) * 60, value]) })),
  };
}

const CHARTS = {
  prometheus_url: PROMETHEUS,
  start: NOW - 3600,
  end: NOW,
  step_seconds: 15,
  charts: [
    chart("requests", "Requests per second", "per_second", [[{ service: "platform" }, [1, 2.5]], [{ service: "gateway" }, [0.5, 0.25]]]),
    chart("latency_p99", "Latency, 99th percentile", "seconds", [[{ service: "platform" }, [0.1, 0.25]]]),
    chart("queue", "Jobs waiting for a GPU", "count", []),
    chart("gpu_memory", "GPU memory", "bytes", [[{ node: "node-a", gpu: "0", figure: "used" }, [0, 4 * 2 ** 30]]]),
    chart("gpu_utilization", "GPU utilization", "ratio", [[{ node: "node-a", gpu: "0" }, [0, 0.25]]]),
  ],
};

function figure(title: string): HTMLElement {
  return screen.getByText(title, { selector: "figcaption" }).closest("figure")!;
}

test("the last hour as charts: a line per series, its latest value, the Prometheus URL", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/-/diagnostics", () => HttpResponse.json({ services: [] })),
    http.get("*/v1/admin/console/charts", ({ request }) => {
      expect(new URL(request.url).searchParams.get("minutes")).toBe("60");
      return HttpResponse.json(CHARTS);
    }),
  );
  renderApp("/admin/diagnostics");
  expect(await screen.findByText("Requests per second")).toBeInTheDocument();
  const requests = figure("Requests per second");
  expect(within(requests).getByRole("img", { name: "Requests per second: 2 series" })).toBeInTheDocument();
  expect(requests.querySelectorAll("polyline")).toHaveLength(2);
  expect(requests.querySelector('polyline[data-series="platform"]')?.getAttribute("points")?.split(" ")).toHaveLength(2);
  expect(within(requests).getAllByTestId("legend-entry").map((entry) => entry.textContent)).toEqual(["platform: 2.5/s", "gateway: 0.25/s"]);
  expect(within(figure("Latency, 99th percentile")).getByTestId("legend-entry")).toHaveTextContent("platform: 250 ms");
  expect(within(figure("GPU memory")).getByTestId("legend-entry")).toHaveTextContent("node-a GPU 0 used: 4 GiB");
  expect(within(figure("GPU utilization")).getByTestId("legend-entry")).toHaveTextContent("node-a GPU 0: 25%");
  expect(within(figure("Jobs waiting for a GPU")).getByText("No data in this window.")).toBeInTheDocument();
  expect(screen.getByRole("link", { name: PROMETHEUS })).toHaveAttribute("href", PROMETHEUS);
  expect(screen.getByText(/for Grafana/)).toBeInTheDocument();
});

test("no Prometheus: the platform's message naming the setting, the services still shown", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/-/diagnostics", () =>
      HttpResponse.json({ services: [{ name: "gateway", url: "http://127.0.0.1:8200", healthy: true, status: "200", metrics: METRICS }] }),
    ),
    http.get("*/v1/admin/console/charts", () =>
      HttpResponse.json(
        { error: { code: "metrics_unavailable", message: "no Prometheus is configured: set PLATFORM_PROMETHEUS_URL to its URL", setting: "PLATFORM_PROMETHEUS_URL" } },
        { status: 503 },
      ),
    ),
  );
  renderApp("/admin/diagnostics");
  expect(await screen.findByRole("alert")).toHaveTextContent("No charts: no Prometheus is configured: set PLATFORM_PROMETHEUS_URL");
  const gateway = (await screen.findByRole("heading", { name: "gateway" })).closest("section")!;
  expect(within(gateway).getByText("Raw /metrics")).toBeInTheDocument();
  expect(screen.queryByRole("img")).toBeNull();
});

test("each service's health, its key figures summed from /metrics, and the raw text", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/console/charts", () => HttpResponse.json(CHARTS)),
    http.get("*/-/diagnostics", () =>
      HttpResponse.json({
        services: [
          { name: "platform", url: "http://127.0.0.1:8100", healthy: true, status: "200", metrics: METRICS },
          { name: "registry", url: "http://127.0.0.1:30501", healthy: false, status: "All connection attempts failed", metrics: "" },
        ],
      }),
    ),
  );
  renderApp("/admin/diagnostics");
  const platform = (await screen.findByRole("heading", { name: "platform" })).closest("section")!;
  expect(within(platform).getByText("healthy")).toBeInTheDocument();
  expect(within(platform).getByText("http_requests_total").nextSibling).toHaveTextContent("42");
  expect(within(platform).getByText("process_resident_memory_bytes").nextSibling).toHaveTextContent("150,000,000");
  expect(within(platform).queryByText("python_gc_objects_collected_total")).toBeNull(); // not a key figure
  // a histogram's count and sum, never its buckets, quantiles or creation times
  expect(within(platform).getByText("gridweave_placement_seconds_count").nextSibling).toHaveTextContent("5");
  expect(within(platform).getByText("gridweave_placement_seconds_sum").nextSibling).toHaveTextContent("0.75");
  expect(within(platform).getByText("gridweave_call_seconds_count").nextSibling).toHaveTextContent("4");
  for (const name of ["http_requests_created", "gridweave_placement_seconds_bucket", "gridweave_placement_seconds_created", "gridweave_call_seconds"]) {
    expect(within(platform).queryByText(name)).toBeNull();
  }
  expect(within(platform).getByText("Raw /metrics")).toBeInTheDocument();
  expect(platform.querySelector("pre")?.textContent).toBe(METRICS);
  const registry = screen.getByRole("heading", { name: "registry" }).closest("section")!;
  expect(within(registry).getByText("unhealthy: All connection attempts failed")).toBeInTheDocument();
});

test("a user who is not an admin gets no diagnostics", async () => {
  renderApp("/admin/diagnostics");
  expect(await screen.findByText("This page is for admins.")).toBeInTheDocument();
});
