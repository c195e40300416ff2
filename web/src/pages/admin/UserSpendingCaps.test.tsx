import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import type { Schemas } from "../../api/client";
import { renderApp } from "../../test/render";
import { ME, noCaps, server } from "../../test/server";

const ADMIN = { ...ME, role: "admin" as const };
const LIMITS = { max_gpus: null, max_vram_mb: null, share_weight: 1, share_weight_is_default: true };

function user(index: number): Schemas["UserResponse"] {
  return { ...ME, user_id: `usr-${index}`, email: `u${index}@example.com` };
}

/** Two users: usr-1 capped by an admin (and by itself, lower), usr-2 with no cap; PUTs
 * answered by ``put``. */
function serve(put: (body: Schemas["SpendingLimitsRequest"], csrf: string | null) => Response | Promise<Response>) {
  const stored: Record<string, Schemas["SpendingLimitsResponse"]> = {
    "usr-1": {
      ...noCaps("usr-1"),
      admin_monthly_cap: 50_000_000,
      admin_per_job_cap: 2_500_000,
      user_monthly_cap: 20_000_000,
      monthly_cap: 20_000_000,
      per_job_cap: 2_500_000,
      spent: 12_500_000,
    },
    "usr-2": noCaps("usr-2"),
  };
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/users", () => HttpResponse.json({ users: [user(1), user(2)], total: 2 })),
    http.get("*/v1/admin/users/:id/limits", ({ params }) => HttpResponse.json({ user_id: String(params.id), ...LIMITS })),
    http.get("*/v1/admin/users/:id/spending-limits", ({ params }) => HttpResponse.json(stored[String(params.id)])),
    http.put("*/v1/admin/users/:id/spending-limits", async ({ request }) =>
      put((await request.json()) as Schemas["SpendingLimitsRequest"], request.headers.get("X-CSRF-Token")),
    ),
  );
}

async function editCapsOf(email: string): Promise<HTMLElement> {
  await userEvent.click(await screen.findByRole("button", { name: `Edit the spending caps of ${email}` }));
  return screen.findByRole("dialog", { name: `Spending caps of ${email}` });
}

test("each user's caps, those in force and this month's spending are in its row", async () => {
  serve(() => HttpResponse.json({}));
  renderApp("/admin/users");
  const [first, second] = await screen.findAllByTestId("user-row");
  expect(await within(first!).findByTestId("user-spending-caps")).toHaveTextContent(
    "admin: monthly 50, per job 2.5; in force: monthly 20, per job 2.5; spent 12.5 this month",
  );
  expect(await within(second!).findByTestId("user-spending-caps")).toHaveTextContent(
    "admin: monthly none, per job none; in force: monthly none, per job none; spent 0 this month",
  );
});

test("an admin sets a user's caps: credits sent as micro-credits, blank as null, and the row shows them", async () => {
  document.cookie = "gw_csrf=token-7; path=/";
  const sent: { body: unknown; csrf: string | null }[] = [];
  serve((body, csrf) => {
    sent.push({ body, csrf });
    return HttpResponse.json({ ...noCaps("usr-2"), admin_monthly_cap: 75_500_000, monthly_cap: 75_500_000 });
  });
  renderApp("/admin/users");
  const dialog = await editCapsOf("u2@example.com");
  expect(within(dialog).getByLabelText("Monthly cap (credits)")).toHaveValue("");
  await userEvent.type(within(dialog).getByLabelText("Monthly cap (credits)"), "75.5");
  await userEvent.click(within(dialog).getByRole("button", { name: "Save caps" }));
  expect(await screen.findByRole("status")).toHaveTextContent("Spending caps of u2@example.com saved: admin: monthly 75.5, per job none");
  expect(screen.queryByRole("dialog")).toBeNull();
  expect(sent).toEqual([{ body: { monthly_cap: 75_500_000, per_job_cap: null }, csrf: "token-7" }]);
  const row = screen.getAllByTestId("user-row")[1]!;
  expect(within(row).getByTestId("user-spending-caps")).toHaveTextContent("in force: monthly 75.5, per job none");
});

test("the dialog opens with the admin's caps (not the user's), and clearing both sends nulls", async () => {
  const sent: unknown[] = [];
  serve((body) => {
    sent.push(body);
    return HttpResponse.json(noCaps("usr-1"));
  });
  renderApp("/admin/users");
  const dialog = await editCapsOf("u1@example.com");
  expect(within(dialog).getByLabelText("Monthly cap (credits)")).toHaveValue("50");
  expect(within(dialog).getByLabelText("Per-job cap (credits)")).toHaveValue("2.5");
  await userEvent.clear(within(dialog).getByLabelText("Monthly cap (credits)"));
  await userEvent.clear(within(dialog).getByLabelText("Per-job cap (credits)"));
  await userEvent.click(within(dialog).getByRole("button", { name: "Save caps" }));
  expect(await screen.findByRole("status")).toHaveTextContent("saved: admin: monthly none, per job none");
  expect(sent).toEqual([{ monthly_cap: null, per_job_cap: null }]);
});

test("text that is no amount is named and never sent; a 422 names the refused field", async () => {
  let tries = 0;
  serve(() => {
    tries += 1;
    const fields = [{ field: "per_job_cap", message: "Input should be greater than or equal to 0" }];
    return HttpResponse.json({ error: { code: "invalid_request", message: "invalid fields: per_job_cap", fields } }, { status: 422 });
  });
  renderApp("/admin/users");
  const dialog = await editCapsOf("u2@example.com");
  await userEvent.type(within(dialog).getByLabelText("Monthly cap (credits)"), "ten");
  await userEvent.click(within(dialog).getByRole("button", { name: "Save caps" }));
  expect(await within(dialog).findByTestId("field-error")).toHaveTextContent("Monthly cap (credits): not a number of credits (blank: no cap)");
  expect(tries).toBe(0);
  await userEvent.clear(within(dialog).getByLabelText("Monthly cap (credits)"));
  await userEvent.type(within(dialog).getByLabelText("Per-job cap (credits)"), "1");
  await userEvent.click(within(dialog).getByRole("button", { name: "Save caps" }));
  expect(await within(dialog).findByRole("alert")).toHaveTextContent("Not saved. invalid fields: per_job_cap");
  expect(within(dialog).getByLabelText("Per-job cap (credits)")).toHaveAttribute("aria-invalid", "true");
  expect(within(dialog).getByLabelText("Monthly cap (credits)")).toHaveAttribute("aria-invalid", "false");
  expect(tries).toBe(1);
});
