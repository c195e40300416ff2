import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import { renderApp } from "../../test/render";
import { ME, server } from "../../test/server";

const ADMIN = { ...ME, role: "admin" as const };

test("a user over quota is shown in red, with why pushes are refused", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/users", () => HttpResponse.json({ users: [{ ...ME, user_id: "usr-bob", email: "bob@example.com" }], total: 1 })),
    http.get("*/v1/admin/users/:id/registry-quota", ({ params }) =>
      HttpResponse.json({ user_id: String(params.id), usage_bytes: 400_000, quota_bytes: 300_000, quota_is_default: false, blobs: 4 }),
    ),
  );
  renderApp("/admin/registry");
  await userEvent.type(await screen.findByLabelText("User id"), "usr-bob");
  await userEvent.click(screen.getByRole("button", { name: "Show" }));
  expect(await screen.findByTestId("over-quota")).toHaveTextContent("Over quota by 0.000100 GB: pushes are refused");
  expect(screen.getByRole("meter", { name: "Registry usage" })).toHaveAttribute("aria-valuenow", "400000");
  expect(document.querySelector('datalist#registry-users option[value="usr-bob"]')).not.toBeNull();
});

test("a user under quota has no warning", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
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
