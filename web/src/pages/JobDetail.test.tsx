import { act, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { renderApp } from "../test/render";
import { job, server } from "../test/server";
import { ApiError, QUERY_DEFAULTS } from "../api/client";
import { LOG_PAGE_BYTES } from "./JobDetail";

/** EventSource as the browser has it, driven by the test. */
class FakeEventSource extends EventTarget {
  static opened: FakeEventSource[] = [];
  onopen: (() => void) | null = null;
  onerror: (() => void) | null = null;
  closed = false;
  constructor(readonly url: string) {
    super();
    FakeEventSource.opened.push(this);
  }
  close() {
    this.closed = true;
  }
  emit(type: string, data: string, id: string) {
    this.dispatchEvent(new MessageEvent(type, { data, lastEventId: id }));
  }
}

beforeEach(() => {
  FakeEventSource.opened = [];
  Element.prototype.scrollIntoView = function scrollIntoView() {}; // as a browser has it
  vi.stubGlobal("EventSource", FakeEventSource);
});
afterEach(() => vi.unstubAllGlobals());

test("live lines arrive from the stream, and the end closes it", async () => {
  server.use(
    http.get("*/v1/jobs/job-1", () => HttpResponse.json({ ...job("job-1"), node: "gpu-a", gpu_indices: [0, 1] })),
    http.get("*/v1/jobs/job-1/logs/download", () => new HttpResponse("page one\n", { headers: { "X-Log-Size": "9" } })),
  );
  renderApp("/jobs/job-1");
  expect(await screen.findByTestId("job-node")).toHaveTextContent("gpu-a");
  const source = FakeEventSource.opened.at(-1)!;
  expect(source.url).toBe("/v1/jobs/job-1/logs/stream");
  act(() => {
    source.onopen?.();
    source.emit("stdout", "tick 0", "7.0");
    source.emit("stderr", "careful", "7.8");
  });
  const lines = await screen.findAllByTestId("log-line");
  expect(lines.map((line) => line.textContent)).toEqual(["tick 0", "careful"]);
  expect(screen.getByText(/page one/)).toBeInTheDocument(); // the full log's first page
  act(() => source.emit("end", "Completed", "7.8"));
  expect(await screen.findByText(/ended: Completed/)).toBeInTheDocument();
  expect(source.closed).toBe(true);
});

test("the timeline lists each transition of the job's conditions with its time and reason", async () => {
  const requeued = {
    ...job("job-2", "Failed"),
    finished: true,
    reason: "Exception",
    message: "ValueError: boom",
    conditions: [
      { type: "Finished", status: "True" as const, reason: "Exception", message: "ValueError: boom", last_transition_time: "2026-12-01T10:05:00Z" },
      { type: "Allocated", status: "False" as const, reason: "NodeLost", message: "gpu-a stopped answering", last_transition_time: "2026-12-01T10:03:00Z" },
      { type: "Running", status: "True" as const, reason: "Started", message: "", last_transition_time: "2026-12-01T10:04:00Z" },
    ],
  };
  server.use(
    http.get("*/v1/jobs/job-2", () => HttpResponse.json(requeued)),
    http.get("*/v1/jobs/job-2/logs/download", () => new HttpResponse("", { headers: { "X-Log-Size": "0" } })),
    http.get("*/v1/usage", () => HttpResponse.json({ records: [], totals: { cost: 0, billed_seconds: 0 }, next_cursor: null })),
  );
  renderApp("/jobs/job-2");
  const timeline = await screen.findByRole("list", { name: "Phase timeline" });
  const steps = within(timeline).getAllByTestId("timeline-step").map((step) => step.textContent ?? "");
  expect(steps).toHaveLength(4);
  expect(steps[0]).toMatch(/^Submitted/);
  expect(steps[1]).toMatch(/^No longer allocated: .*NodeLost: gpu-a stopped answering/);
  expect(steps.join()).not.toMatch(/\(False\)|ended/); // words, not a condition's raw status
  expect(steps[2]).toMatch(/^Running.*Started/);
  expect(steps[3]).toMatch(/^Finished.*Exception: ValueError: boom/);
  expect(steps.join()).not.toMatch(/Now:/); // a finished job has no current step
});

test("an unfinished job's timeline ends with its current phase", async () => {
  server.use(
    http.get("*/v1/jobs/job-3", () => HttpResponse.json({ ...job("job-3", "Pending"), conditions: [] })),
    http.get("*/v1/jobs/job-3/logs/download", () => new HttpResponse("", { headers: { "X-Log-Size": "0" } })),
  );
  renderApp("/jobs/job-3");
  const timeline = await screen.findByRole("list", { name: "Phase timeline" });
  const steps = within(timeline).getAllByTestId("timeline-step").map((step) => step.textContent ?? "");
  expect(steps).toHaveLength(2);
  expect(steps[1]).toBe("Now: Pending");
});

test("the full log is read a page at a time, and the whole stream downloads as a file", async () => {
  const asked: [string | null, string | null, string | null][] = [];
  server.use(
    http.get("*/v1/jobs/job-4", () => HttpResponse.json({ ...job("job-4", "Running"), conditions: [] })),
    http.get("*/v1/jobs/job-4/logs/download", ({ request }) => {
      const query = new URL(request.url).searchParams;
      asked.push([query.get("stream"), query.get("offset"), query.get("length")]);
      return new HttpResponse(`${query.get("stream")} from ${query.get("offset")}`, { headers: { "X-Log-Size": String(2 * LOG_PAGE_BYTES + 10) } });
    }),
  );
  renderApp("/jobs/job-4");
  const page = await screen.findByLabelText("Log page");
  expect(await within(page).findByText("stdout from 0")).toBeInTheDocument();
  expect(screen.getByText("Page 1 of 3")).toBeInTheDocument();
  await userEvent.click(screen.getByRole("button", { name: "Next page" }));
  expect(await within(page).findByText(`stdout from ${LOG_PAGE_BYTES}`)).toBeInTheDocument();
  expect(screen.getByText("Page 2 of 3")).toBeInTheDocument();
  const download = screen.getByRole("link", { name: "Download stdout" });
  expect(download).toHaveAttribute("href", "/v1/jobs/job-4/logs/download?stream=stdout"); // all of it
  expect(download).toHaveAttribute("download");
  await userEvent.selectOptions(screen.getByLabelText("Stream"), "stderr");
  expect(await within(page).findByText("stderr from 0")).toBeInTheDocument(); // from its first page
  expect(screen.getByRole("link", { name: "Download stderr" })).toHaveAttribute("href", "/v1/jobs/job-4/logs/download?stream=stderr");
  expect(asked).toEqual([
    ["stdout", "0", String(LOG_PAGE_BYTES)],
    ["stdout", String(LOG_PAGE_BYTES), String(LOG_PAGE_BYTES)],
    ["stderr", "0", String(LOG_PAGE_BYTES)],
  ]);
});

test("a finished job's cost is its own usage record, asked by job id", async () => {
  const asked: URLSearchParams[] = [];
  server.use(
    http.get("*/v1/jobs/job-5", () => HttpResponse.json({ ...job("job-5", "Completed"), billed_seconds: 3, conditions: [] })),
    http.get("*/v1/jobs/job-5/logs/download", () => new HttpResponse("", { headers: { "X-Log-Size": "0" } })),
    http.get("*/v1/usage", ({ request }) => {
      const query = new URL(request.url).searchParams;
      asked.push(query);
      const record = { id: 1, job_id: "job-5", cost: 1_250_000 };
      return HttpResponse.json({ records: query.get("job_id") === "job-5" ? [record] : [], totals: { cost: 1_250_000 }, next_before_id: null });
    }),
  );
  renderApp("/jobs/job-5");
  expect(await screen.findByText("Cost: 1.25")).toBeInTheDocument();
  expect(asked.map((query) => [query.get("job_id"), query.get("limit")])).toEqual([["job-5", "1"]]);
});

test("another user's job answers no such job at once: a 404 is the answer, asked once", async () => {
  let asked = 0;
  server.use(
    http.get("*/v1/jobs/job-bob", () => {
      asked += 1;
      return HttpResponse.json({ error: { code: "not_found", message: "no such job" } }, { status: 404 });
    }),
  );
  renderApp("/jobs/job-bob", { asShipped: true }); // the app's own retry rule
  expect(await screen.findByRole("alert", {}, { timeout: 800 })).toHaveTextContent("no such job");
  await new Promise((resolve) => setTimeout(resolve, 2_500)); // past a retry and a poll
  expect(asked).toBe(1);
  expect(screen.queryByText("Loading…")).toBeNull();
});

test("a read that failed on the way is asked once more; a refusal never", () => {
  expect(QUERY_DEFAULTS.retry(0, new ApiError("no such job", 404))).toBe(false);
  expect(QUERY_DEFAULTS.retry(0, new ApiError("unavailable", 503))).toBe(true);
  expect(QUERY_DEFAULTS.retry(0, new TypeError("Failed to fetch"))).toBe(true);
  expect(QUERY_DEFAULTS.retry(1, new TypeError("Failed to fetch"))).toBe(false);
});
