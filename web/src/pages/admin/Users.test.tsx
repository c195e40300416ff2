import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { beforeEach, expect, test } from "vitest";
import type { Schemas } from "../../api/client";
import { renderApp } from "../../test/render";
import { ME, noCaps, server } from "../../test/server";

const ADMIN = { ...ME, role: "admin" as const };

// each row reads its user's limits and spending caps (UserLimits.test.tsx and
// UserSpendingCaps.test.tsx test them): none set
beforeEach(() => {
  server.use(
    http.get("*/v1/admin/users/:id/limits", ({ params }) =>
      HttpResponse.json({ user_id: String(params.id), max_gpus: null, max_vram_mb: null, share_weight: 1, share_weight_is_default: true }),
    ),
    http.get("*/v1/admin/users/:id/spending-limits", ({ params }) => HttpResponse.json(noCaps(String(params.id)))),
  );
});

function user(index: number): Schemas["UserResponse"] {
  return { ...ME, user_id: `usr-${index}`, email: `u${index}@example.com` };
}

test("users are listed a page at a time, with the total", async () => {
  const asked: string[] = [];
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/users", ({ request }) => {
      const offset = Number(new URL(request.url).searchParams.get("offset"));
      asked.push(new URL(request.url).search);
      const users = Array.from({ length: offset === 0 ? 50 : 2 }, (_, i) => user(offset + i));
      return HttpResponse.json({ users, total: 52 });
    }),
  );
  renderApp("/admin/users");
  expect(await screen.findAllByTestId("user-row")).toHaveLength(50);
  expect(screen.getByTestId("users-total")).toHaveTextContent("52 users");
  await userEvent.click(screen.getByRole("button", { name: "Next" }));
  await waitFor(() => expect(screen.getAllByTestId("user-row")).toHaveLength(2));
  expect(screen.getByRole("button", { name: "Next" })).toBeDisabled();
  expect(asked).toEqual(["?limit=50&offset=0", "?limit=50&offset=50"]);
});

test("a double-clicked grant sends one key, so the platform makes one grant", async () => {
  document.cookie = "gw_csrf=token-7; path=/";
  const grants: { key: string | null; csrf: string | null; body: unknown }[] = [];
  let release: () => void = () => undefined;
  const answered = new Promise<void>((resolve) => (release = resolve));
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/users", () => HttpResponse.json({ users: [user(1)], total: 1 })),
    http.post("*/v1/admin/users/:id/credit-grants", async ({ request, params }) => {
      grants.push({ key: request.headers.get("Idempotency-Key"), csrf: request.headers.get("X-CSRF-Token"), body: await request.json() });
      await answered;
      return HttpResponse.json(
        { user_id: String(params.id), amount: 2_500_000, idempotency_key: "k", balance: 7_500_000, available: 7_500_000 },
        { status: 201 },
      );
    }),
  );
  renderApp("/admin/users");
  const row = await screen.findByTestId("user-row");
  await userEvent.type(within(row).getByLabelText("Credits to grant to u1@example.com"), "2.5");
  const grant = within(row).getByRole("button", { name: "Grant" });
  await userEvent.dblClick(grant);
  release();
  expect(await screen.findByRole("status")).toHaveTextContent("Granted 2.5 credits to u1@example.com: balance 7.5");
  expect(grants.length).toBeGreaterThanOrEqual(1);
  expect(new Set(grants.map((grant) => grant.key)).size).toBe(1); // every request of the click: one key
  expect(grants[0]).toMatchObject({ csrf: "token-7", body: { amount: 2_500_000 } });
  expect(grants[0]!.key).toMatch(/^[0-9a-f]{32}$/);
  // the next grant is a new one: a new key
  await userEvent.type(within(row).getByLabelText("Credits to grant to u1@example.com"), "1");
  await userEvent.click(grant);
  await waitFor(() => expect(new Set(grants.map((grant) => grant.key)).size).toBe(2));
});

test("a refused grant says why, next to the user", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/users", () => HttpResponse.json({ users: [user(1)], total: 1 })),
    http.post("*/v1/admin/users/:id/credit-grants", () =>
      HttpResponse.json({ error: { code: "not_found", message: "no user usr-1" } }, { status: 404 }),
    ),
  );
  renderApp("/admin/users");
  const row = await screen.findByTestId("user-row");
  await userEvent.type(within(row).getByLabelText("Credits to grant to u1@example.com"), "1");
  await userEvent.click(within(row).getByRole("button", { name: "Grant" }));
  expect(await within(row).findByRole("alert")).toHaveTextContent("no user usr-1");
});

test("a grant tried again after a failure sends the same key: one grant, however many tries", async () => {
  const keys: (string | null)[] = [];
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/users", () => HttpResponse.json({ users: [user(1)], total: 1 })),
    http.post("*/v1/admin/users/:id/credit-grants", ({ request, params }) => {
      keys.push(request.headers.get("Idempotency-Key"));
      if (keys.length === 1) return HttpResponse.json({ error: { code: "service_unavailable", message: "credit_service is unavailable: try again" } }, { status: 503 });
      return HttpResponse.json({ user_id: String(params.id), amount: 1_000_000, idempotency_key: "k", balance: 1_000_000, available: 1_000_000 }, { status: 201 });
    }),
  );
  renderApp("/admin/users");
  const row = await screen.findByTestId("user-row");
  await userEvent.type(within(row).getByLabelText("Credits to grant to u1@example.com"), "1");
  await userEvent.click(within(row).getByRole("button", { name: "Grant" }));
  expect(await within(row).findByRole("alert")).toHaveTextContent("try again");
  await userEvent.click(within(row).getByRole("button", { name: "Grant" }));
  expect(await screen.findByRole("status")).toHaveTextContent("Granted 1 credits");
  expect(keys).toHaveLength(2);
  expect(keys[1]).toBe(keys[0]);
});
