import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { beforeEach, expect, test } from "vitest";
import type { Schemas } from "../api/client";
import { renderApp } from "../test/render";
import { noCaps, server } from "../test/server";
import { microCredits, spentPercent } from "./SpendingLimits";

const NO_USAGE = { user_id: "usr-alice", records: [], next_before_id: null, period_from: null, period_to: null, totals: { records: 0, cost: 0, charged: 0, billed_seconds: 0, gpu_seconds: 0 } };

function limits(overrides: Partial<Schemas["SpendingLimitsResponse"]> = {}): Schemas["SpendingLimitsResponse"] {
  return { ...noCaps("usr-alice"), ...overrides };
}

beforeEach(() => {
  server.use(
    http.get("*/v1/credits", () => HttpResponse.json({ user_id: "usr-alice", balance: 10_000_000, held: 0, available: 10_000_000 })),
    http.get("*/v1/usage", () => HttpResponse.json(NO_USAGE)),
    http.get("*/v1/credits/ledger", () => HttpResponse.json({ user_id: "usr-alice", entries: [], next_before_id: null })),
  );
});

test("the month's spending is a bar of the monthly cap, with an alert from 80%", async () => {
  server.use(http.get("*/v1/account/spending-limits", () => HttpResponse.json(limits({ monthly_cap: 1_000_000, user_monthly_cap: 1_000_000, spent: 800_000 }))));
  renderApp("/credits");
  const bar = await screen.findByRole("progressbar", { name: "Spent of the monthly cap" });
  expect(bar).toHaveAttribute("aria-valuenow", "80");
  expect(screen.getByTestId("spending-alert")).toHaveTextContent("80% of your monthly spending cap is used");
  expect(screen.getByTestId("spending-spent")).toHaveTextContent("0.8 credits (held included) of a monthly cap of 1");
  expect(screen.getByTestId("spending-per-job")).toHaveTextContent("Per-job cap: none");
});

test("below 80% there is no alert; without a cap, no bar", async () => {
  server.use(http.get("*/v1/account/spending-limits", () => HttpResponse.json(limits({ monthly_cap: 1_000_000, spent: 799_999 }))));
  const first = renderApp("/credits");
  expect(await screen.findByRole("progressbar")).toHaveAttribute("aria-valuenow", "79");
  expect(screen.queryByTestId("spending-alert")).toBeNull();
  first.unmount();
  server.use(http.get("*/v1/account/spending-limits", () => HttpResponse.json(limits({ spent: 5_000_000 }))));
  renderApp("/credits");
  expect(await screen.findByTestId("spending-spent")).toHaveTextContent("no monthly cap");
  expect(screen.queryByRole("progressbar")).toBeNull();
});

test("the form sets your caps in micro-credits, exactly", async () => {
  const sent: unknown[] = [];
  server.use(
    http.get("*/v1/account/spending-limits", () => HttpResponse.json(limits())),
    http.put("*/v1/account/spending-limits", async ({ request }) => {
      const body = (await request.json()) as { monthly_cap: number | null; per_job_cap: number | null };
      sent.push(body);
      return HttpResponse.json(limits({ monthly_cap: body.monthly_cap, per_job_cap: body.per_job_cap, user_monthly_cap: body.monthly_cap, user_per_job_cap: body.per_job_cap }));
    }),
  );
  renderApp("/credits");
  await userEvent.type(await screen.findByLabelText("Monthly cap (credits)"), "50");
  await userEvent.type(screen.getByLabelText("Per-job cap (credits)"), "0.3");
  await userEvent.click(screen.getByRole("button", { name: "Save caps" }));
  expect(await screen.findByText("Spending limits saved.")).toBeInTheDocument();
  expect(sent).toEqual([{ monthly_cap: 50_000_000, per_job_cap: 300_000 }]);
  await waitFor(() => expect(screen.getByTestId("spending-per-job")).toHaveTextContent("Per-job cap: 0.3 credits"));
});

test("a cap above an admin's is named beside its field; unreadable text is never sent", async () => {
  let puts = 0;
  server.use(
    http.get("*/v1/account/spending-limits", () => HttpResponse.json(limits({ monthly_cap: 10_000_000, admin_monthly_cap: 10_000_000 }))),
    http.put("*/v1/account/spending-limits", () => {
      puts += 1;
      return HttpResponse.json(
        { error: { code: "invalid_request", message: "invalid fields: monthly_cap", fields: [{ field: "monthly_cap", message: "must not pass the cap an admin set (10000000 micro-credits)" }] } },
        { status: 422 },
      );
    }),
  );
  renderApp("/credits");
  expect(await screen.findByTestId("spending-admin")).toHaveTextContent("An admin's caps: monthly 10, per job none");
  const monthly = screen.getByLabelText("Monthly cap (credits)");
  await userEvent.type(monthly, "-1");
  await userEvent.click(screen.getByRole("button", { name: "Save caps" }));
  expect(await screen.findByTestId("spending-field-error")).toHaveTextContent("Monthly cap (credits): not a number of credits");
  expect(puts).toBe(0);
  await userEvent.clear(monthly);
  await userEvent.type(monthly, "11");
  await userEvent.click(screen.getByRole("button", { name: "Save caps" }));
  await waitFor(() => expect(screen.getByTestId("spending-field-error")).toHaveTextContent("must not pass the cap an admin set"));
  expect(monthly).toHaveAttribute("aria-invalid", "true");
  expect(puts).toBe(1);
});

test("credits read exactly into micro-credits; the share spent in whole percent", () => {
  expect(microCredits("0.1")).toBe(100_000);
  expect(microCredits(" 2.5 ")).toBe(2_500_000);
  expect(microCredits("")).toBeNull();
  expect(microCredits("1.0000001")).toBe("at most 6 decimals (1 micro-credit)");
  expect(microCredits("1e3")).toContain("not a number");
  expect(spentPercent(limits({ monthly_cap: 3, spent: 2 }))).toBe(66);
  expect(spentPercent(limits({ monthly_cap: 0, spent: 0 }))).toBe(100);
  expect(spentPercent(limits())).toBeNull();
});
