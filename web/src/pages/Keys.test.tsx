import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { afterEach, expect, test, vi } from "vitest";
import { type Schemas, when } from "../api/client";
import { renderApp } from "../test/render";
import { server } from "../test/server";

afterEach(() => vi.restoreAllMocks());

function key(id: string, fields: Partial<Schemas["ApiKeyResponse"]> = {}): Schemas["ApiKeyResponse"] {
  return { key_id: id, prefix: `gw_live_${id}`, name: id, created_at: "2026-12-01T10:00:00Z", revoked_at: null, last_used_at: null, ...fields };
}

test("a new key is shown once in a dialog; the list says when each key was last used", async () => {
  const keys = [key("laptop", { last_used_at: "2026-12-02T08:30:00Z" }), key("ci")];
  const bodies: unknown[] = [];
  server.use(
    http.get("*/v1/keys", () => HttpResponse.json({ keys })),
    http.post("*/v1/keys", async ({ request }) => {
      bodies.push(await request.json());
      keys.push(key("desk"));
      return HttpResponse.json({ ...key("desk"), api_key: "gw_live_desk_secret" }, { status: 201 });
    }),
  );
  renderApp("/keys");
  const rows = await screen.findAllByTestId("key-row");
  expect(rows[0]).toHaveTextContent(when("2026-12-02T08:30:00Z"));
  expect(rows[1]).toHaveTextContent("never");
  await userEvent.type(screen.getByLabelText("Name"), "desk");
  await userEvent.click(screen.getByRole("button", { name: "Create key" }));
  const dialog = await screen.findByRole("dialog");
  expect(within(dialog).getByTestId("new-key")).toHaveTextContent("gw_live_desk_secret");
  expect(within(dialog).getByText(/shown this once/)).toBeInTheDocument();
  expect(bodies).toEqual([{ name: "desk" }]);
  await userEvent.click(within(dialog).getByRole("button", { name: "Done" }));
  await waitFor(() => expect(screen.queryByRole("dialog")).toBeNull());
  expect(await screen.findAllByTestId("key-row")).toHaveLength(3);
  expect(screen.queryByText("gw_live_desk_secret")).toBeNull(); // gone once closed
});

test("revoke asks first, then sends one DELETE; a revoked key has no button", async () => {
  let revoked: string | null = null;
  const deleted: string[] = [];
  server.use(
    http.get("*/v1/keys", () => HttpResponse.json({ keys: [key("laptop", { revoked_at: revoked })] })),
    http.delete("*/v1/keys/:id", ({ params }) => {
      deleted.push(String(params.id));
      revoked = "2026-12-03T09:00:00Z";
      return HttpResponse.json(key("laptop", { revoked_at: revoked }));
    }),
  );
  const confirm = vi.spyOn(window, "confirm").mockReturnValueOnce(false).mockReturnValueOnce(true);
  renderApp("/keys");
  const row = await screen.findByTestId("key-row");
  await userEvent.click(within(row).getByRole("button", { name: "Revoke" }));
  expect(deleted).toEqual([]); // declined
  await userEvent.click(within(row).getByRole("button", { name: "Revoke" }));
  await waitFor(() => expect(screen.getByTestId("key-row")).toHaveTextContent("revoked"));
  expect(deleted).toEqual(["laptop"]);
  expect(confirm).toHaveBeenCalledTimes(2);
  expect(within(screen.getByTestId("key-row")).queryByRole("button")).toBeNull();
});
