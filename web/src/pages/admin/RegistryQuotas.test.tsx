import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import { renderApp } from "../../test/render";
import { ME, server } from "../../test/server";
import { size } from "./RegistryQuotas";

const ADMIN = { ...ME, role: "admin" as const };

test("a user over quota is shown in red, with why pushes are refused", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/registry-quotas", () => HttpResponse.json({ users: [], total: 0 })),
    http.get("*/v1/admin/users", () => HttpResponse.json({ users: [{ ...ME, user_id: "usr-bob", email: "bob@example.com" }], total: 1 })),
    http.get("*/v1/admin/users/:id/registry-quota", ({ params }) =>
      HttpResponse.json({ user_id: String(params.id), usage_bytes: 400_000, quota_bytes: 300_000, quota_is_default: false, blobs: 4 }),
    ),
  );
  renderApp("/admin/registry");
  await userEvent.type(await screen.findByLabelText("User id"), "usr-bob");
  await userEvent.click(screen.getByRole("button", { name: "Show" }));
  expect(await screen.findByTestId("over-quota")).toHaveTextContent("Over quota by 100.00 KB: pushes are refused");
  expect(screen.getByText("400.00 KB of 300.00 KB in 4 blobs")).toBeInTheDocument();
  expect(screen.getByRole("meter", { name: "Registry usage" })).toHaveAttribute("aria-valuenow", "400000");
  expect(document.querySelector('datalist#registry-users option[value="usr-bob"]')).not.toBeNull();
});

test("a user under quota has no warning", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/registry-quotas", () => HttpResponse.json({ users: [], total: 0 })),
    http.get("*/v1/admin/users", () => HttpResponse.json({ users: [], total: 0 })),
    http.get("*/v1/admin/users/:id/registry-quota", ({ params }) =>
      HttpResponse.json({ user_id: String(params.id), usage_bytes: 100, quota_bytes: 300_000, quota_is_default: true, blobs: 1 }),
    ),
  );
  renderApp("/admin/registry");
  await userEvent.type(await screen.findByLabelText("User id"), "usr-bob");
  await userEvent.click(screen.getByRole("button", { name: "Show" }));
  expect(await screen.findByRole("meter", { name: "Registry usage" })).toBeInTheDocument();
  expect(screen.queryByTestId("over-quota")).toBeNull();
});

test("an edited quota is sent in bytes and is in force at once: the bar and the warning follow", async () => {
  let quota = 300_000;
  const sent: unknown[] = [];
  const answer = (id: string) => ({ user_id: id, usage_bytes: 400_000, quota_bytes: quota, quota_is_default: false, blobs: 4 });
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/registry-quotas", () => HttpResponse.json({ users: [], total: 0 })),
    http.get("*/v1/admin/users", () => HttpResponse.json({ users: [], total: 0 })),
    http.get("*/v1/admin/users/:id/registry-quota", ({ params }) => HttpResponse.json(answer(String(params.id)))),
    http.put("*/v1/admin/users/:id/registry-quota", async ({ params, request }) => {
      const body = (await request.json()) as { quota_bytes: number };
      sent.push([params.id, body]);
      quota = body.quota_bytes;
      return HttpResponse.json(answer(String(params.id)));
    }),
  );
  renderApp("/admin/registry");
  await userEvent.type(await screen.findByLabelText("User id"), "usr-bob");
  await userEvent.click(screen.getByRole("button", { name: "Show" }));
  expect(await screen.findByTestId("over-quota")).toBeInTheDocument();
  const field = screen.getByLabelText("Quota (GB)");
  expect(field).toHaveValue(0.0003);
  await userEvent.clear(field);
  await userEvent.type(field, "1.5");
  await userEvent.click(screen.getByRole("button", { name: "Save" }));
  expect(await screen.findByRole("status")).toHaveTextContent("Quota saved: in force from the next push");
  expect(sent).toEqual([["usr-bob", { quota_bytes: 1_500_000_000 }]]);
  expect(screen.getByRole("meter", { name: "Registry usage" })).toHaveAttribute("aria-valuemax", "1500000000");
  expect(screen.queryByTestId("over-quota")).toBeNull();
});

test("every user is listed most used first with a bar; Edit opens that user's quota, and a save reorders the list", async () => {
  const rows = [
    { user_id: "usr-bob", usage_bytes: 400_000, quota_bytes: 300_000, quota_is_default: false, blobs: 4 },
    { user_id: "usr-cy", usage_bytes: 1_000, quota_bytes: 10 ** 10, quota_is_default: true, blobs: 1 },
  ];
  const asked: string[] = [];
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/users", () => HttpResponse.json({ users: [{ ...ME, user_id: "usr-bob", email: "bob@example.com" }], total: 1 })),
    http.get("*/v1/admin/registry-quotas", ({ request }) => {
      asked.push(new URL(request.url).search);
      return HttpResponse.json({ users: rows, total: 2 });
    }),
    http.put("*/v1/admin/users/:id/registry-quota", async ({ params, request }) => {
      const body = (await request.json()) as { quota_bytes: number };
      rows[0] = { ...rows[0]!, quota_bytes: body.quota_bytes };
      return HttpResponse.json({ ...rows[0]!, user_id: String(params.id) });
    }),
  );
  renderApp("/admin/registry");
  const [bob, cy] = (await screen.findAllByTestId("quota-row")) as [HTMLElement, HTMLElement];
  expect(bob).toHaveTextContent("bob@example.com"); // named by email where the user has one
  expect(bob).toHaveTextContent("400.00 KB of 300.00 KB");
  expect(within(bob).getByRole("meter", { name: "Storage used by bob@example.com" })).toHaveAttribute("aria-valuemax", "300000");
  expect(cy).toHaveTextContent("1.00 KB of 10.00 GB (default)");
  expect(asked[0]).toBe("?limit=50&offset=0");
  await userEvent.click(within(bob).getByRole("button", { name: "Edit the quota of bob@example.com" }));
  expect(await screen.findByTestId("over-quota")).toHaveTextContent("Over quota by 100.00 KB");
  const field = screen.getByLabelText("Quota (GB)");
  await userEvent.clear(field);
  await userEvent.type(field, "0.001");
  await userEvent.click(screen.getByRole("button", { name: "Save" }));
  await waitFor(() => expect(screen.getAllByTestId("quota-row")[0]).toHaveTextContent("400.00 KB of 1.00 MB"));
  expect(screen.queryByTestId("over-quota")).toBeNull();
});

test("sizes read in decimal units", () => {
  expect(size(0)).toBe("0 B");
  expect(size(999)).toBe("999 B");
  expect(size(300_000)).toBe("300.00 KB");
  expect(size(10 * 10 ** 9)).toBe("10.00 GB");
});
