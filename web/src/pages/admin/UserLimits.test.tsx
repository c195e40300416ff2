import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import type { Schemas } from "../../api/client";
import { renderApp } from "../../test/render";
import { ME, noCaps, server } from "../../test/server";

const ADMIN = { ...ME, role: "admin" as const };
const DEFAULTS = { max_gpus: null, max_vram_mb: null, share_weight: 1, share_weight_is_default: true };

function user(index: number): Schemas["UserResponse"] {
  return { ...ME, user_id: `usr-${index}`, email: `u${index}@example.com` };
}

/** Two users: usr-1 with quotas and a weight, usr-2 with none; PUTs answered by ``put``. */
function serve(put: (body: Schemas["UserLimitsRequest"], csrf: string | null) => Response | Promise<Response>) {
  const stored: Record<string, Schemas["UserLimitsResponse"]> = {
    "usr-1": { user_id: "usr-1", max_gpus: 2, max_vram_mb: 8192, share_weight: 2.5, share_weight_is_default: false },
    "usr-2": { user_id: "usr-2", ...DEFAULTS },
  };
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/users", () => HttpResponse.json({ users: [user(1), user(2)], total: 2 })),
    http.get("*/v1/admin/users/:id/limits", ({ params }) => HttpResponse.json(stored[String(params.id)])),
    http.get("*/v1/admin/users/:id/spending-limits", ({ params }) => HttpResponse.json(noCaps(String(params.id)))),
    http.put("*/v1/admin/users/:id/limits", async ({ request }) =>
      put((await request.json()) as Schemas["UserLimitsRequest"], request.headers.get("X-CSRF-Token")),
    ),
  );
}

/** Opens the limits dialog of the user with ``email`` from its row. */
async function editLimitsOf(email: string): Promise<HTMLElement> {
  await userEvent.click(await screen.findByRole("button", { name: `Edit the limits of ${email}` }));
  return screen.findByRole("dialog", { name: `Limits of ${email}` });
}

function invalid(fields: { field: string; message: string }[]) {
  const names = fields.map((item) => item.field).join(", ");
  return HttpResponse.json({ error: { code: "invalid_request", message: `invalid fields: ${names}`, fields } }, { status: 422 });
}

test("each user's quotas and share weight are in its row", async () => {
  serve(() => HttpResponse.json({}));
  renderApp("/admin/users");
  const [first, second] = await screen.findAllByTestId("user-row");
  expect(await within(first!).findByText("2 GPUs, 8 GiB VRAM; weight 2.5")).toBeInTheDocument();
  expect(await within(second!).findByText("no quota; weight 1 (default)")).toBeInTheDocument();
});

test("an admin edits a user's limits: every field sent, blank as null, and the row shows them", async () => {
  document.cookie = "gw_csrf=token-3; path=/";
  const sent: { body: unknown; csrf: string | null }[] = [];
  serve((body, csrf) => {
    sent.push({ body, csrf });
    return HttpResponse.json({ user_id: "usr-2", max_gpus: 4, max_vram_mb: null, share_weight: 0.5, share_weight_is_default: false });
  });
  renderApp("/admin/users");
  const dialog = await editLimitsOf("u2@example.com");
  expect(within(dialog).getByLabelText("GPU quota")).toHaveValue("");
  await userEvent.type(within(dialog).getByLabelText("GPU quota"), "4");
  await userEvent.type(within(dialog).getByLabelText("Share weight"), "0.5");
  await userEvent.click(within(dialog).getByRole("button", { name: "Save limits" }));
  expect(await screen.findByRole("status")).toHaveTextContent("Limits of u2@example.com saved: 4 GPUs; weight 0.5");
  expect(screen.queryByRole("dialog")).toBeNull();
  expect(sent).toEqual([{ body: { max_gpus: 4, max_vram_mb: null, share_weight: 0.5 }, csrf: "token-3" }]);
  const row = screen.getAllByTestId("user-row")[1]!;
  expect(within(row).getByTestId("user-limits")).toHaveTextContent("4 GPUs; weight 0.5");
});

test("the dialog opens with the limits in force, and clearing them all sends nulls", async () => {
  const sent: unknown[] = [];
  serve((body) => {
    sent.push(body);
    return HttpResponse.json({ user_id: "usr-1", ...DEFAULTS });
  });
  renderApp("/admin/users");
  const dialog = await editLimitsOf("u1@example.com");
  expect(within(dialog).getByLabelText("GPU quota")).toHaveValue("2");
  expect(within(dialog).getByLabelText("VRAM quota (MiB)")).toHaveValue("8192");
  expect(within(dialog).getByLabelText("Share weight")).toHaveValue("2.5");
  for (const label of ["GPU quota", "VRAM quota (MiB)", "Share weight"]) await userEvent.clear(within(dialog).getByLabelText(label));
  await userEvent.click(within(dialog).getByRole("button", { name: "Save limits" }));
  expect(await screen.findByRole("status")).toHaveTextContent("saved: no quota; weight 1 (default)");
  expect(sent).toEqual([{ max_gpus: null, max_vram_mb: null, share_weight: null }]);
});

test("a 422 names each refused field beside it, and nothing is saved", async () => {
  let tries = 0;
  serve(() => {
    tries += 1;
    return invalid([
      { field: "max_gpus", message: "Input should be a valid integer, got a number with a fractional part" },
      { field: "share_weight", message: "Input should be greater than 0" },
    ]);
  });
  renderApp("/admin/users");
  const dialog = await editLimitsOf("u2@example.com");
  await userEvent.type(within(dialog).getByLabelText("GPU quota"), "1.5");
  await userEvent.type(within(dialog).getByLabelText("Share weight"), "0");
  await userEvent.click(within(dialog).getByRole("button", { name: "Save limits" }));
  const alert = await within(dialog).findByRole("alert");
  expect(alert).toHaveTextContent("Not saved. GPU quota (max_gpus): Input should be a valid integer");
  expect(alert).toHaveTextContent("Share weight (share_weight): Input should be greater than 0");
  const gpus = within(dialog).getByLabelText("GPU quota");
  expect(gpus).toHaveAttribute("aria-invalid", "true");
  expect(gpus).toHaveAccessibleDescription("GPU quota: Input should be a valid integer, got a number with a fractional part");
  expect(within(dialog).getByLabelText("Share weight")).toHaveAccessibleDescription("Share weight: Input should be greater than 0");
  expect(within(dialog).getByLabelText("VRAM quota (MiB)")).toHaveAttribute("aria-invalid", "false");
  expect(gpus).toHaveValue("1.5"); // kept, to correct
  expect(tries).toBe(1);
  const row = screen.getAllByTestId("user-row")[1]!;
  expect(within(row).getByTestId("user-limits")).toHaveTextContent("no quota; weight 1 (default)");
});

test("text that is no number is named and never sent (a blank field would clear the quota)", async () => {
  let tries = 0;
  serve(() => {
    tries += 1;
    return HttpResponse.json({});
  });
  renderApp("/admin/users");
  const dialog = await editLimitsOf("u2@example.com");
  await userEvent.type(within(dialog).getByLabelText("VRAM quota (MiB)"), "8 GiB");
  await userEvent.click(within(dialog).getByRole("button", { name: "Save limits" }));
  expect(await within(dialog).findByRole("alert")).toHaveTextContent("VRAM quota (MiB) (max_vram_mb): not a number (blank: no limit)");
  expect(tries).toBe(0);
});

test("another refusal (no such user) says the API's words in the dialog", async () => {
  serve(() => HttpResponse.json({ error: { code: "not_found", message: "no user usr-2" } }, { status: 404 }));
  renderApp("/admin/users");
  const dialog = await editLimitsOf("u2@example.com");
  await userEvent.type(within(dialog).getByLabelText("GPU quota"), "1");
  await userEvent.click(within(dialog).getByRole("button", { name: "Save limits" }));
  expect(await within(dialog).findByRole("alert")).toHaveTextContent("Not saved. no user usr-2");
  await userEvent.click(within(dialog).getByRole("button", { name: "Cancel" }));
  await waitFor(() => expect(screen.queryByRole("dialog")).toBeNull());
});
