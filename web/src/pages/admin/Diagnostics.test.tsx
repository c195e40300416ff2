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

test("each service's health, its key figures summed from /metrics, and the raw text", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
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
