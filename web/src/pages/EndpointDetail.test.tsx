import { screen, waitFor } from "@testing-library/react";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import { renderApp } from "../test/render";
import { endpoint, server } from "../test/server";
import { millis } from "./EndpointDetail";

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

test("the endpoint's replicas, health, request figures and cold starts are shown", async () => {
  const asked: string[] = [];
  server.use(
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
  expect(screen.getByTestId("endpoint-logs")).toHaveTextContent("not available");
  expect(asked).toContain("/v1/endpoints/chat/-/stats");
});

test("an endpoint without calls shows dashes, not zeros, for latency", async () => {
  server.use(
    http.get("*/v1/endpoints/idle", () => HttpResponse.json(endpoint("idle", "Stopped"))),
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

test("milliseconds read as ms, seconds past ten seconds", () => {
  expect([millis(null), millis(3.21), millis(18.4), millis(12_400)]).toEqual(["—", "3.2 ms", "18 ms", "12.4 s"]);
});
