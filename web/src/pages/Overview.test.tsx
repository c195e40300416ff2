import { screen, waitFor, within } from "@testing-library/react";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import { renderApp } from "../test/render";
import { endpoint, job, server } from "../test/server";

test("the overview shows balance, burn rate, running jobs and endpoints", async () => {
  const asked: URLSearchParams[] = [];
  server.use(
    http.get("*/v1/credits", () => HttpResponse.json({ user_id: "usr-alice", balance: 12_000_000, held: 2_000_000, available: 10_000_000 })),
    http.get("*/v1/usage", () =>
      HttpResponse.json({
        user_id: "usr-alice",
        records: [],
        next_before_id: null,
        period_from: null,
        period_to: null,
        totals: { records: 3, cost: 48_000_000, charged: 48_000_000, billed_seconds: 100, gpu_seconds: 100 },
      }),
    ),
    http.get("*/v1/jobs", ({ request }) => {
      asked.push(new URL(request.url).searchParams);
      return HttpResponse.json({ jobs: [job("job-1")], total: 1, next_cursor: null });
    }),
    http.get("*/v1/endpoints", () =>
      HttpResponse.json({ endpoints: [endpoint("chat"), { ...endpoint("old", "Stopped"), reason: "Idle" }] }),
    ),
  );
  renderApp("/");
  await waitFor(() => expect(screen.getByTestId("balance")).toHaveTextContent("12"));
  // 48 credits over the last 24 hours: 2 an hour
  await waitFor(() => expect(screen.getByTestId("burn-rate")).toHaveTextContent("2 / h"));
  await waitFor(() => expect(screen.getByTestId("running-jobs")).toHaveTextContent("1"));
  expect(asked[0]?.getAll("phase")).toEqual(["Running", "Allocated"]);
  // one replica at 100 micro-credits a second: 0.36 credits an hour
  await waitFor(() => expect(screen.getByTestId("running-endpoints")).toHaveTextContent("1 running"));
  expect(screen.getByText(/of 2; 0.36 \/ h now/)).toBeInTheDocument();
  const listed = screen.getAllByTestId("overview-endpoint");
  expect(listed).toHaveLength(2);
  expect(within(listed[0]!).getByRole("link", { name: "chat" })).toHaveAttribute("href", "/endpoints/chat");
  expect(screen.getByRole("link", { name: "job-1" })).toHaveAttribute("href", "/jobs/job-1");
});

test("no endpoints says so", async () => {
  server.use(
    http.get("*/v1/credits", () => HttpResponse.json({ user_id: "usr-alice", balance: 0, held: 0, available: 0 })),
    http.get("*/v1/usage", () => HttpResponse.json({ user_id: "usr-alice", records: [], next_before_id: null, period_from: null, period_to: null, totals: { records: 0, cost: 0, charged: 0, billed_seconds: 0, gpu_seconds: 0 } })),
    http.get("*/v1/jobs", () => HttpResponse.json({ jobs: [], total: 0, next_cursor: null })),
    http.get("*/v1/endpoints", () => HttpResponse.json({ endpoints: [] })),
  );
  renderApp("/");
  expect(await screen.findByText("No endpoints.")).toBeInTheDocument();
  expect(screen.getByTestId("running-endpoints")).toHaveTextContent("0 running");
  expect(screen.getByText("Nothing is running.")).toBeInTheDocument();
});
