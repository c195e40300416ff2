import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import { renderApp } from "../test/render";
import { endpoint, server } from "../test/server";
import { endpointPrice, LOG_LINES, millis } from "./EndpointDetail";

const STATS = {
  name: "chat",
  since: "2026-12-01T10:02:00Z",
  process_started_at: "2026-12-01T09:00:00Z",
  requests: 42,
  ok: 39,
  client_errors: 1,
  server_errors: 2,
  unreachable: 0,
  cold_starts: 3,
  last_cold_start_ms: 12_400,
  last_request_at: "2026-12-01T10:05:00Z",
  latency_samples: 42,
  latency_p50_ms: 18.4,
  latency_p90_ms: 61.2,
  latency_p99_ms: 250,
};

const NO_LOGS = { replicas: [], lines: LOG_LINES, message: "no replica of this endpoint has run in this Ray session" };

test("the endpoint's replicas, health, request figures and cold starts are shown", async () => {
  const asked: string[] = [];
  server.use(
    http.get("*/v1/endpoints/chat/-/logs", () => HttpResponse.json(NO_LOGS)),
    http.get("*/v1/endpoints/chat", () => HttpResponse.json(endpoint("chat"))),
    http.get("*/v1/endpoints/chat/-/stats", ({ request }) => {
      asked.push(new URL(request.url).pathname);
      return HttpResponse.json(STATS);
    }),
  );
  renderApp("/endpoints/chat");
  expect(await screen.findByRole("heading", { name: "chat" })).toBeInTheDocument();
  expect(screen.getByTestId("endpoint-replicas")).toHaveTextContent("1 ready");
  expect(screen.getByTestId("endpoint-health")).toHaveTextContent("Healthy");
  await waitFor(() => expect(screen.getByTestId("stat-requests")).toHaveTextContent("42"));
  expect(screen.getByTestId("stat-errors")).toHaveTextContent("2 / 0");
  expect(screen.getByTestId("stat-p50")).toHaveTextContent("18 ms");
  expect(screen.getByTestId("stat-p90")).toHaveTextContent("61 ms");
  expect(screen.getByTestId("stat-p99")).toHaveTextContent("250 ms");
  expect(screen.getByTestId("stat-cold-starts")).toHaveTextContent("3, last 12.4 s");
  expect(screen.getByText(/start again when the platform restarts/)).toBeInTheDocument();
  await waitFor(() => expect(screen.getByTestId("endpoint-logs")).toHaveTextContent("No replica logs: no replica of this endpoint has run"));
  expect(asked).toContain("/v1/endpoints/chat/-/stats");
});

test("an endpoint without calls shows dashes, not zeros, for latency", async () => {
  server.use(
    http.get("*/v1/endpoints/idle", () => HttpResponse.json(endpoint("idle", "Stopped"))),
    http.get("*/v1/endpoints/idle/-/logs", () => HttpResponse.json(NO_LOGS)),
    http.get("*/v1/endpoints/idle/-/stats", () =>
      HttpResponse.json({
        ...STATS,
        name: "idle",
        ...{ requests: 0, ok: 0, client_errors: 0, server_errors: 0, cold_starts: 0, latency_samples: 0 },
        ...{ last_cold_start_ms: null, last_request_at: null, latency_p50_ms: null, latency_p90_ms: null, latency_p99_ms: null },
      }),
    ),
  );
  renderApp("/endpoints/idle");
  await waitFor(() => expect(screen.getByTestId("stat-requests")).toHaveTextContent("0"));
  expect(screen.getByTestId("stat-p50")).toHaveTextContent("—");
  expect(screen.getByTestId("endpoint-replicas")).toHaveTextContent("0 ready");
});

test("a scaled-to-zero endpoint a call woke says why it still waits", async () => {
  const waking = {
    ...endpoint("idle", "Stopped"),
    reason: "Idle",
    waking_reason: "WaitingForGpu",
    waking_message: "waiting for a GPU with 1024 MiB free (any): every one that fits is taken now",
  };
  server.use(
    http.get("*/v1/endpoints/idle", () => HttpResponse.json(waking)),
    http.get("*/v1/endpoints/idle/-/logs", () => HttpResponse.json(NO_LOGS)),
    http.get("*/v1/endpoints/idle/-/stats", () => HttpResponse.json({ ...STATS, name: "idle" })),
  );
  renderApp("/endpoints/idle");
  expect(await screen.findByTestId("endpoint-waking")).toHaveTextContent(
    "Waking, waits for a GPU (WaitingForGpu): waiting for a GPU with 1024 MiB free (any)",
  );
});

test("another user's (or a missing) endpoint says so, with the way back", async () => {
  server.use(
    http.get("*/v1/endpoints/theirs", () =>
      HttpResponse.json({ error: { code: "not_found", message: "no such endpoint" } }, { status: 404 }),
    ),
  );
  renderApp("/endpoints/theirs");
  expect(await screen.findByRole("alert")).toHaveTextContent("no such endpoint");
  expect(screen.getByRole("link", { name: "All endpoints" })).toHaveAttribute("href", "/endpoints");
});

test("the endpoints list links each endpoint to its page", async () => {
  server.use(http.get("*/v1/endpoints", () => HttpResponse.json({ endpoints: [endpoint("chat")] })));
  renderApp("/endpoints");
  expect(await screen.findByRole("link", { name: "chat" })).toHaveAttribute("href", "/endpoints/chat");
});

test("the endpoints list says why an endpoint stopped or waits", async () => {
  const stopped = { ...endpoint("broke", "Stopped"), reason: "OutOfCredits" };
  const waking = { ...endpoint("idle", "Stopped"), reason: "Idle", waking_reason: "WaitingForGpu" };
  server.use(http.get("*/v1/endpoints", () => HttpResponse.json({ endpoints: [endpoint("chat"), stopped, waking] })));
  renderApp("/endpoints");
  await screen.findByRole("link", { name: "idle" });
  expect(screen.getAllByTestId("endpoint-state").map((cell) => cell.textContent)).toEqual([
    "Running",
    "Stopped (OutOfCredits)",
    "Stopped (Idle), waking: WaitingForGpu",
  ]);
});

test("milliseconds read as ms, seconds past ten seconds", () => {
  expect([millis(null), millis(3.21), millis(18.4), millis(12_400)]).toEqual(["—", "3.2 ms", "18 ms", "12.4 s"]);
});

test("each replica's stdout and stderr show as plain text, refreshed on request", async () => {
  const asked: string[] = [];
  let reads = 0;
  server.use(
    http.get("*/v1/endpoints/chat", () => HttpResponse.json(endpoint("chat"))),
    http.get("*/v1/endpoints/chat/-/stats", () => HttpResponse.json(STATS)),
    http.get("*/v1/endpoints/chat/-/logs", ({ request }) => {
      asked.push(new URL(request.url).search);
      reads += 1;
      return HttpResponse.json({
        lines: LOG_LINES,
        message: null,
        replicas: [
          {
            replica: "abc123",
            state: "ALIVE",
            started_at: "2026-12-01T10:00:00Z",
            error: null,
            streams: [
              { stream: "stdout", lines: ["ready", `<img src=x onerror="alert(1)"> read ${reads}`], truncated: true },
              { stream: "stderr", lines: ["INFO GET /greet 200"], truncated: false },
            ],
          },
          { replica: "old999", state: "DEAD", started_at: "2026-12-01T09:00:00Z", error: "its node did not answer", streams: [] },
        ],
      });
    }),
  );
  const { container } = renderApp("/endpoints/chat");
  const stdout = await screen.findByRole("region", { name: "Replica abc123" });
  expect(within(stdout).getByTestId("replica-stdout")).toHaveTextContent('<img src=x onerror="alert(1)"> read 1');
  expect(container.querySelector("img")).toBeNull(); // the user's text is never markup
  expect(within(stdout).getByText(/older ones left out/)).toBeInTheDocument();
  expect(within(stdout).getByTestId("replica-stderr")).toHaveTextContent("INFO GET /greet 200");
  expect(within(stdout).getByRole("heading")).toHaveTextContent("abc123 · running");
  const dead = screen.getByRole("region", { name: "Replica old999" });
  expect(dead).toHaveTextContent("dead");
  expect(dead).toHaveTextContent("could not be read: its node did not answer");
  await userEvent.click(screen.getByRole("button", { name: "Refresh" }));
  await waitFor(() => expect(within(stdout).getByTestId("replica-stdout")).toHaveTextContent("read 2"));
  expect(asked[0]).toBe(`?lines=${LOG_LINES}`);
});

test("an endpoint of any vendor not running yet shows the most it may cost, never a price that changes", () => {
  expect(endpointPrice({ price_per_second: null, max_price_per_second: 90 })).toBe(
    "up to 0.00009 / s per replica (the price of the GPUs it is placed on)",
  );
  expect(endpointPrice({ price_per_second: 60, max_price_per_second: 90 })).toBe("0.00006 / s per replica");
  expect(endpointPrice({ price_per_second: null, max_price_per_second: null })).toBe("unknown");
});
