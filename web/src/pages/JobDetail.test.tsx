import { act, screen } from "@testing-library/react";
import { http, HttpResponse } from "msw";
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { renderApp } from "../test/render";
import { job, server } from "../test/server";

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
