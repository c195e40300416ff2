import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import type { Schemas } from "../api/client";
import { renderApp } from "../test/render";
import { server } from "../test/server";
import { entryKind, LEDGER_PAGE } from "./Credits";

const NO_USAGE = { user_id: "usr-alice", records: [], next_before_id: null, period_from: null, period_to: null, totals: { records: 0, cost: 0, charged: 0, billed_seconds: 0, gpu_seconds: 0 } };

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
