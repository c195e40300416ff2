import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import { renderApp } from "../test/render";
import { mapStatus, server } from "../test/server";

test("the maps page shows each map's progress, a page at a time", async () => {
  const asked: URLSearchParams[] = [];
  server.use(
    http.get("*/v1/maps", ({ request }) => {
      const query = new URL(request.url).searchParams;
      asked.push(query);
      return query.get("cursor") === "c2"
        ? HttpResponse.json({ maps: [mapStatus("map-3", "Completed", 100, 0)], total: 3, next_cursor: null })
        : HttpResponse.json({ maps: [mapStatus("map-1"), mapStatus("map-2", "Pending", 0, 0)], total: 3, next_cursor: "c2" });
    }),
  );
  renderApp("/maps");
  const rows = await screen.findAllByTestId("map-row");
  expect(rows).toHaveLength(2);
  expect(screen.getByTestId("maps-total")).toHaveTextContent("3 maps");
  expect(asked[0]?.get("limit")).toBe("20");
  const bar = screen.getByRole("progressbar", { name: "map-1 progress" });
  expect(bar).toHaveAttribute("aria-valuemax", "100");
  expect(bar).toHaveAttribute("aria-valuenow", "42"); // done and failed: the inputs ended
  expect(bar).toHaveAttribute("aria-valuetext", "40 / 100 done, 2 failed");
  expect(within(rows[0]!).getByTestId("map-progress")).toHaveTextContent("40 / 100 done, 2 failed");
  expect(within(rows[1]!).getByTestId("map-progress")).toHaveTextContent(/^0 \/ 100 done$/); // no failed: none said
  expect(rows[0]).toHaveTextContent("1 of 2 workers running");
  await userEvent.click(screen.getByRole("button", { name: "Next" }));
  await waitFor(() => expect(screen.getByText("map-3")).toBeInTheDocument());
  expect(asked.at(-1)?.get("cursor")).toBe("c2");
  expect(screen.getByTestId("map-progress")).toHaveTextContent("100 / 100 done");
  expect(screen.getByRole("button", { name: "Next" })).toBeDisabled();
});

test("no maps says so", async () => {
  server.use(http.get("*/v1/maps", () => HttpResponse.json({ maps: [], total: 0, next_cursor: null })));
  renderApp("/maps");
  expect(await screen.findByText("No maps yet.")).toBeInTheDocument();
  expect(screen.getByTestId("maps-total")).toHaveTextContent("0 maps");
});

test("a map's page shows its progress and each worker with its node, GPUs and phase", async () => {
  server.use(http.get("*/v1/maps/:id", ({ params }) => HttpResponse.json(mapStatus(String(params.id)))));
  renderApp("/maps/map-1");
  const workers = await screen.findAllByTestId("worker-row");
  expect(workers).toHaveLength(2);
  expect(screen.getByRole("progressbar", { name: "map-1 progress" })).toHaveAttribute("aria-valuenow", "42");
  expect(screen.getByText("100 inputs in 10 chunks of 10")).toBeInTheDocument();
  const [first, second] = workers.map((row) => within(row).getAllByRole("cell").map((cell) => cell.textContent));
  expect(first).toEqual(["map-1-w0", "Running", "gpu-a", "0, 1", "30", "2", "1", "—"]);
  expect(second).toEqual(["map-1-w1", "Pending", "—", "—", "10", "0", "2", "NodeLost: gpu-b left"]);
  expect(within(workers[0]!).getByRole("link", { name: "map-1-w0" })).toHaveAttribute("href", "/jobs/map-1-w0");
});

test("cancel stops the map and says the inputs done stay readable", async () => {
  document.cookie = "gw_csrf=token-9; path=/";
  let cancelled: string | null = null;
  server.use(
    http.get("*/v1/maps/:id", ({ params }) =>
      HttpResponse.json(mapStatus(String(params.id), cancelled ? "Cancelled" : "Running")),
    ),
    http.post("*/v1/maps/:id/cancel", ({ request, params }) => {
      cancelled = request.headers.get("X-CSRF-Token");
      return HttpResponse.json(mapStatus(String(params.id), "Cancelled"));
    }),
  );
  renderApp("/maps/map-1");
  await userEvent.click(await screen.findByRole("button", { name: "Cancel" }));
  expect(await screen.findByRole("status")).toHaveTextContent("Cancelled: the inputs done stay readable.");
  expect(cancelled).toBe("token-9");
  await waitFor(() => expect(screen.queryByRole("button", { name: "Cancel" })).toBeNull());
});

test("another user's map is not found, asked once", async () => {
  let asked = 0;
  server.use(
    http.get("*/v1/maps/:id", () => {
      asked += 1;
      return HttpResponse.json({ error: { code: "map_not_found", message: "no such map: map-x" } }, { status: 404 });
    }),
  );
  renderApp("/maps/map-x", { asShipped: true });
  expect(await screen.findByRole("alert")).toHaveTextContent("no such map: map-x");
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(asked).toBe(1);
});

test("the main navigation has Maps", async () => {
  server.use(http.get("*/v1/maps", () => HttpResponse.json({ maps: [], total: 0, next_cursor: null })));
  renderApp("/maps");
  const nav = await screen.findByRole("navigation", { name: "Main" });
  expect(within(nav).getByRole("link", { name: "Maps" })).toHaveAttribute("href", "/maps");
});
