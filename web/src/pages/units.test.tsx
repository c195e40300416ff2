import { render, screen } from "@testing-library/react";
import { expect, test } from "vitest";
import { count, day, mib, type Schemas, when } from "../api/client";
import { dailySpend, usageCsv } from "./Credits";
import { keyFigures } from "./admin/Diagnostics";
import { VramBar } from "./admin/Nodes";

function record(finished_at: string, cost: number): Schemas["UsageRecordResponse"] {
  return {
    id: cost,
    kind: "job",
    job_id: `job-${cost}`,
    endpoint_id: null,
    user_id: "u",
    owner_id: "u",
    node: "gpu-a",
    vendor: "nvidia",
    gpu_count: 1,
    gpu_indices: [0],
    vram_mb: 1024,
    started_at: null,
    finished_at,
    wall_seconds: 1,
    billed_seconds: 1,
    price_per_gpu_second: cost,
    cost,
    hold_reference: "h",
    created_at: finished_at,
    settlement: { state: "settled", amount: cost, attempts: 1, charged: cost, error: null, error_code: null, hold_id: null, settled_at: null },
  };
}

test("daily spend sums each UTC day and keeps empty days", () => {
  const now = new Date("2026-12-03T12:00:00Z");
  const days = dailySpend([record("2026-12-03T01:00:00Z", 5), record("2026-12-03T23:00:00Z", 7), record("2026-12-01T00:00:00Z", 2_000_000)], now, 3);
  expect(days.map((d) => [d.day, d.cost])).toEqual([["2026-12-01", 2_000_000], ["2026-12-02", 0], ["2026-12-03", 12]]);
  expect(days[0]?.credits).toBe(2);
});

test("the CSV has a header and one row per record", () => {
  const lines = usageCsv([record("2026-12-03T01:00:00Z", 5)]).trim().split("\n");
  expect(lines[0]).toMatch(/^finished_at,kind,job_id/);
  expect(lines[1]).toBe("2026-12-03T01:00:00Z,job,job-5,,gpu-a,1,1024,1,5,5,settled");
});

test("key figures are summed per metric name from the Prometheus text", () => {
  const text = '# TYPE http_requests_total counter\nhttp_requests_total{path="/a"} 3\nhttp_requests_total{path="/b"} 4\nother 9\nprocess_resident_memory_bytes 1.5e6\n';
  expect(keyFigures(text, ["http_requests_total", "process_"])).toEqual({ http_requests_total: 7, process_resident_memory_bytes: 1_500_000 });
});

test("a VRAM bar's value is the GPU's held memory", () => {
  render(<VramBar gpu={{ index: 1, model: "A100", vendor: "nvidia", vram_mb: 81920, held_mb: 20480, free_mb: 61440, schedulable: true, simulated: false }} />);
  const meter = screen.getByRole("meter", { name: "GPU 1 VRAM held" });
  expect(meter).toHaveAttribute("aria-valuenow", "20480");
  expect(meter).toHaveAttribute("aria-valuemax", "81920");
});

test("VRAM reads in MiB (whole GiB when it is), never MB", () => {
  expect([mib(8192), mib(1536), mib(81920), mib(0)]).toEqual(["8 GiB", "1536 MiB", "80 GiB", "0 MiB"]);
});

test("one job, two jobs", () => {
  expect([count(1, "job"), count(2, "job"), count(0, "job"), count(1200, "record")]).toEqual(["1 job", "2 jobs", "0 jobs", "1,200 records"]);
});

test("every date has the one format, the browser's own, and a day reads as a moment's date", () => {
  const moment = when("2026-12-01T10:05:00");
  expect(moment.startsWith(day("2026-12-01"))).toBe(true);
  expect(day("2026-12-01")).toBe(new Date(2026, 11, 1).toLocaleDateString(undefined, { year: "numeric", month: "2-digit", day: "2-digit" }));
  expect(when(null)).toBe("—");
});
