import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { afterEach, expect, test, vi } from "vitest";
import type { Schemas } from "../../api/client";
import { renderApp } from "../../test/render";
import { ME, server } from "../../test/server";
import { joinKeyState } from "./JoinKeys";

const ADMIN = { ...ME, role: "admin" as const };

afterEach(() => vi.restoreAllMocks());

function joinKey(id: string, overrides: Partial<Schemas["JoinKeyResponse"]> = {}): Schemas["JoinKeyResponse"] {
  return {
    id,
    description: "rack 4",
    created_by: "usr-admin",
    created_at: "2026-12-01T10:00:00Z",
    expires_at: "2999-12-02T10:00:00Z",
    max_uses: 3,
    uses: 1,
    max_gpus: 8,
    vendor: null,
    revoked_at: null,
    ...overrides,
  };
}

test("a key is created with its expiry, uses and limits; the join command is shown and copied", async () => {
  document.cookie = "gw_csrf=token-9; path=/";
  const writeText = vi.fn(async () => undefined);
  Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
  const sent: unknown[] = [];
  const listed = [joinKey("jk_01")];
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/join-keys", () => HttpResponse.json({ join_keys: listed })),
    http.post("*/v1/admin/join-keys", async ({ request }) => {
      expect(request.headers.get("X-CSRF-Token")).toBe("token-9");
      const body = (await request.json()) as Record<string, unknown>;
      sent.push(body);
      const created = joinKey("jk_02", { description: "lab", uses: 0, max_uses: 5, max_gpus: null, vendor: "amd" });
      listed.unshift(created);
      return HttpResponse.json(
        { ...created, key: "gwjk_secret", join_command: "sudo deploy/join-node.sh --master https://m:8800 --join-key gwjk_secret" },
        { status: 201 },
      );
    }),
  );
  renderApp("/admin/join-keys");
  expect(await screen.findAllByTestId("join-key-row")).toHaveLength(1);
  await userEvent.type(screen.getByLabelText("Description"), "lab");
  await userEvent.clear(screen.getByLabelText("Expires in (hours)"));
  await userEvent.type(screen.getByLabelText("Expires in (hours)"), "2");
  await userEvent.clear(screen.getByLabelText("Uses"));
  await userEvent.type(screen.getByLabelText("Uses"), "5");
  await userEvent.selectOptions(screen.getByLabelText("Vendor"), "amd");
  await userEvent.click(screen.getByRole("button", { name: "Create join key" }));
  const dialog = await screen.findByRole("dialog");
  expect(within(dialog).getByTestId("join-command")).toHaveTextContent("--join-key gwjk_secret");
  expect(sent).toEqual([{ description: "lab", ttl_seconds: 7200, max_uses: 5, max_gpus: null, vendor: "amd" }]);
  await userEvent.click(within(dialog).getByRole("button", { name: "Copy the join command" }));
  expect(writeText).toHaveBeenCalledWith("sudo deploy/join-node.sh --master https://m:8800 --join-key gwjk_secret");
  expect(within(dialog).getByRole("button", { name: "Copy the join command" })).toHaveTextContent("Copied");
  await userEvent.click(within(dialog).getByRole("button", { name: "Done" }));
  await waitFor(() => expect(screen.getAllByTestId("join-key-row")).toHaveLength(2));
  expect(screen.queryByText(/gwjk_secret/)).toBeNull(); // shown once
});

test("the field the platform refused is named, and no dialog opens", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/join-keys", () => HttpResponse.json({ join_keys: [] })),
    http.post("*/v1/admin/join-keys", () =>
      HttpResponse.json(
        { error: { code: "invalid_request", message: "ttl_seconds: Input should be less than or equal to 7776000", fields: [{ field: "ttl_seconds", message: "too long" }] } },
        { status: 422 },
      ),
    ),
  );
  renderApp("/admin/join-keys");
  expect(await screen.findByText("No join keys yet.")).toBeInTheDocument();
  await userEvent.click(screen.getByRole("button", { name: "Create join key" }));
  expect(await screen.findByRole("alert")).toHaveTextContent("ttl_seconds");
  expect(screen.queryByRole("dialog")).toBeNull();
});

test("revoke asks first, then sends one DELETE for the key", async () => {
  const revoked: string[] = [];
  vi.spyOn(window, "confirm").mockReturnValue(true);
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/admin/join-keys", () =>
      HttpResponse.json({ join_keys: revoked.length ? [joinKey("jk_01", { revoked_at: "2026-12-01T11:00:00Z" })] : [joinKey("jk_01")] }),
    ),
    http.delete("*/v1/admin/join-keys/:id", ({ params }) => {
      revoked.push(String(params.id));
      return HttpResponse.json(joinKey(String(params.id), { revoked_at: "2026-12-01T11:00:00Z" }));
    }),
  );
  renderApp("/admin/join-keys");
  await userEvent.click(await screen.findByRole("button", { name: "Revoke jk_01" }));
  await waitFor(() => expect(screen.getByTestId("join-key-row")).toHaveTextContent("revoked"));
  expect(revoked).toEqual(["jk_01"]);
  expect(screen.queryByRole("button", { name: "Revoke jk_01" })).toBeNull();
});

test("a key's state: revoked, expired, used up, usable", () => {
  const now = new Date("2026-12-01T12:00:00Z");
  expect(joinKeyState(joinKey("a", { revoked_at: "2026-12-01T11:00:00Z" }), now)).toBe("revoked");
  expect(joinKeyState(joinKey("b", { expires_at: "2026-12-01T11:59:59Z" }), now)).toBe("expired");
  expect(joinKeyState(joinKey("c", { uses: 3, max_uses: 3 }), now)).toBe("used up");
  expect(joinKeyState(joinKey("d"), now)).toBe("usable");
});

test("a user who is not an admin does not get the page", async () => {
  renderApp("/admin/join-keys");
  expect(await screen.findByText("This page is for admins.")).toBeInTheDocument();
});
