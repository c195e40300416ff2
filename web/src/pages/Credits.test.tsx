import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { beforeEach, expect, test } from "vitest";
import type { Schemas } from "../api/client";
import { renderApp } from "../test/render";
import { server } from "../test/server";
import { entryKind, LEDGER_PAGE, USAGE_PAGE } from "./Credits";

const NO_USAGE = { user_id: "usr-alice", records: [], next_before_id: null, period_from: null, period_to: null, totals: { records: 0, cost: 0, charged: 0, billed_seconds: 0, gpu_seconds: 0 } };

// the spending limits card (SpendingLimits.test.tsx tests it): no caps here
beforeEach(() => {
  server.use(
    http.get("*/v1/account/spending-limits", () =>
      HttpResponse.json({ user_id: "usr-alice", monthly_cap: null, per_job_cap: null, user_monthly_cap: null, user_per_job_cap: null, admin_monthly_cap: null, admin_per_job_cap: null, month_start: "2026-12-01T00:00:00Z", spent: 0 }),
    ),
  );
});

function entry(id: number, amount: number, balanceAfter: number, kind: string, counterparty: string | null = null): Schemas["LedgerEntryResponse"] {
  return { id, amount, balance_after: balanceAfter, kind, operation_key: `k${id}`, hold_id: null, counterparty_user_id: counterparty, created_at: "2026-12-01T10:00:00Z" };
}

test("the ledger lists every change of the balance, newest first, a page at a time", async () => {
  const asked: (string | null)[] = [];
  server.use(
    http.get("*/v1/credits", () => HttpResponse.json({ user_id: "usr-alice", balance: 4_500_000, held: 0, available: 4_500_000 })),
    http.get("*/v1/usage", () => HttpResponse.json(NO_USAGE)),
    http.get("*/v1/credits/ledger", ({ request }) => {
      const query = new URL(request.url).searchParams;
      asked.push(query.get("before_id"));
      expect(query.get("limit")).toBe(String(LEDGER_PAGE));
      return query.get("before_id") === "7"
        ? HttpResponse.json({ user_id: "usr-alice", entries: [entry(3, 5_000_000, 5_000_000, "mint")], next_before_id: null })
        : HttpResponse.json({ user_id: "usr-alice", entries: [entry(9, 1_000_000, 4_500_000, "transfer", "usr-bob"), entry(7, -1_500_000, 3_500_000, "capture")], next_before_id: 7 });
    }),
  );
  renderApp("/credits");
  const rows = await screen.findAllByTestId("ledger-row");
  expect(rows.map((row) => row.textContent)).toEqual([
    expect.stringContaining("received (from usr-bob)+1"),
    expect.stringContaining("paid (settled hold)-1.5"),
  ]);
  expect(within(rows[1]!).getByText("3.5")).toBeInTheDocument(); // the balance after it
  await userEvent.click(screen.getByRole("button", { name: "Older" }));
  await waitFor(() => expect(screen.getAllByTestId("ledger-row")).toHaveLength(1));
  expect(screen.getByTestId("ledger-row")).toHaveTextContent("credits granted+5");
  expect(screen.getByRole("button", { name: "Older" })).toBeDisabled();
  await userEvent.click(screen.getByRole("button", { name: "Newer" }));
  await waitFor(() => expect(screen.getAllByTestId("ledger-row")).toHaveLength(2));
  expect(asked.slice(0, 2)).toEqual([null, "7"]);
});

test("a user without credits yet has an empty ledger that says so", async () => {
  server.use(
    http.get("*/v1/credits", () => HttpResponse.json({ user_id: "usr-alice", balance: 0, held: 0, available: 0 })),
    http.get("*/v1/usage", () => HttpResponse.json(NO_USAGE)),
    http.get("*/v1/credits/ledger", () => HttpResponse.json({ user_id: "usr-alice", entries: [], next_before_id: null })),
  );
  renderApp("/credits");
  expect(await screen.findByText("No credits yet.")).toBeInTheDocument();
  expect(screen.queryByTestId("ledger-row")).toBeNull();
});

test("each kind of entry reads in words; a transfer says which way it went and with whom", () => {
  expect(entryKind(entry(1, -5, 0, "transfer", "usr-bob"))).toBe("sent (to usr-bob)");
  expect(entryKind(entry(1, 5, 5, "transfer", "usr-bob"))).toBe("received (from usr-bob)");
  expect(entryKind(entry(1, -120, 5, "settlement"))).toBe("paid for what ran");
  expect(entryKind(entry(1, 5, 5, "refund"))).toBe("refund"); // a kind not named here: as it is
});

test("the usage records come a page at a time, however many the month has", async () => {
  const record = (id: number) => ({
    id, kind: "job", job_id: `job-${id}`, endpoint_id: null, user_id: "usr-alice", owner_id: "usr-alice", node: "gpu-a", vendor: "nvidia",
    gpu_count: 1, gpu_indices: [0], vram_mb: 1024, started_at: null, finished_at: "2026-12-01T10:00:00Z", wall_seconds: 1, billed_seconds: 1,
    price_per_gpu_second: 5, cost: 5, hold_reference: `h${id}`, created_at: "2026-12-01T10:00:00Z",
    settlement: { state: "settled", amount: 5, attempts: 1, charged: 5, error: null, error_code: null, hold_id: null, settled_at: null },
  });
  const totals = { records: 1000, cost: 5000, charged: 5000, billed_seconds: 1000, gpu_seconds: 1000 };
  const asked: [string | null, string | null][] = [];
  server.use(
    http.get("*/v1/credits", () => HttpResponse.json({ user_id: "usr-alice", balance: 1, held: 0, available: 1 })),
    http.get("*/v1/credits/ledger", () => HttpResponse.json({ user_id: "usr-alice", entries: [], next_before_id: null })),
    http.get("*/v1/usage", ({ request }) => {
      const query = new URL(request.url).searchParams;
      const limit = Number(query.get("limit"));
      asked.push([query.get("limit"), query.get("before_id")]);
      const top = Number(query.get("before_id") ?? "1001") - 1;
      const records = Array.from({ length: Math.min(limit, top) }, (_, i) => record(top - i));
      return HttpResponse.json({ ...NO_USAGE, records, totals, next_before_id: records.length === limit ? top - limit + 1 : null });
    }),
  );
  renderApp("/credits");
  await waitFor(() => expect(screen.getAllByTestId("usage-row")).toHaveLength(USAGE_PAGE));
  expect(screen.getByTestId("usage-shown")).toHaveTextContent(`1–${USAGE_PAGE} of 1,000 records`);
  expect(screen.getAllByTestId("usage-row")[0]).toHaveTextContent("job-1000");
  await userEvent.click(screen.getByRole("button", { name: "Older records" }));
  await waitFor(() => expect(screen.getAllByTestId("usage-row")[0]).toHaveTextContent(`job-${1000 - USAGE_PAGE}`));
  expect(screen.getAllByTestId("usage-row")).toHaveLength(USAGE_PAGE);
  expect(screen.getByTestId("usage-shown")).toHaveTextContent(`${USAGE_PAGE + 1}–${2 * USAGE_PAGE} of 1,000 records`);
  expect(asked).toContainEqual([String(USAGE_PAGE), String(1001 - USAGE_PAGE)]);
});

test("the prices: a row per tier, per GPU-second and per GPU-hour", async () => {
  server.use(
    http.get("*/v1/credits", () => HttpResponse.json({ user_id: "usr-alice", balance: 0, held: 0, available: 0 })),
    http.get("*/v1/usage", () => HttpResponse.json(NO_USAGE)),
    http.get("*/v1/credits/ledger", () => HttpResponse.json({ user_id: "usr-alice", entries: [], next_before_id: null })),
  );
  renderApp("/credits");
  await waitFor(() => expect(screen.getAllByTestId("price-row")).toHaveLength(3));
  expect(screen.getAllByTestId("price-row").map((row) => [...row.querySelectorAll("td")].map((cell) => cell.textContent))).toEqual([
    ["amd", "up to 16 GiB", "0.00009", "0.324"],
    ["nvidia", "up to 8 GiB", "0.00006", "0.216"],
    ["nvidia", "over 8 GiB", "0.00078", "2.808"],
  ]);
});
