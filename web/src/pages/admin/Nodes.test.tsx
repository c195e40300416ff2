import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import type { Schemas } from "../../api/client";
import { renderApp } from "../../test/render";
import { ME, server } from "../../test/server";
import { age, cores, memory } from "./Nodes";

const ADMIN = { ...ME, role: "admin" as const };
/** A node that declares no CPU or memory: nothing held, no limit. */
const UNDECLARED = { cpu_held_millis: 0, memory_held_mb: 0 };

function inventory(heldMb: number, schedulable = true): Schemas["InventoryResponse"] {
  const gpu = { index: 0, vendor: "nvidia", model: "A100", vram_mb: 81_920, held_mb: heldMb, free_mb: 81_920 - heldMb, schedulable, simulated: false };
  return {
    nodes: [
      { name: "gpu-a", ready: true, gpus: [gpu], ...UNDECLARED },
      { name: "local", ready: true, gpus: [{ ...gpu, held_mb: 0, free_mb: 81_920 }], ...UNDECLARED },
    ],
  };
}

function joined(cordoned: boolean): Schemas["NodeResponse"] {
  return {
    name: "gpu-a",
    status: "Ready",
    cordoned,
    labels: {},
    vpn_ip: "10.88.0.2",
    joined_at: "2026-12-01T10:00:00Z",
    last_heartbeat_at: new Date(Date.now() - 12_000).toISOString(),
    gpus: [],
  };
}

function card(name: string): HTMLElement {
  return screen.getByRole("heading", { name }).closest("section")!;
}

test("cordon and uncordon a registry node; a node outside the registry says why it cannot be", async () => {
  let cordoned = false;
  const sent: unknown[] = [];
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/nodes", () => HttpResponse.json(inventory(0, !cordoned))),
    http.get("*/v1/admin/nodes", () => HttpResponse.json({ nodes: [joined(cordoned)] })),
    http.put("*/v1/admin/nodes/:name/cordon", async ({ request, params }) => {
      const body = (await request.json()) as { cordoned: boolean };
      sent.push([params.name, body]);
      cordoned = body.cordoned;
      return HttpResponse.json(joined(cordoned));
    }),
  );
  renderApp("/admin/nodes");
  await screen.findByRole("heading", { name: "gpu-a" });
  await waitFor(() => expect(within(card("gpu-a")).getByText(/heartbeat 1\d s ago/)).toBeInTheDocument());
  // this machine's node (gridweave up's local inventory): the buttons disabled, with why
  for (const name of ["Cordon", "Drain"]) {
    const button = within(card("local")).getByRole("button", { name });
    expect(button).toBeDisabled();
    expect(button).toHaveAccessibleDescription(/cordon and drain are for nodes joined with a join key/);
  }
  expect(within(card("local")).getByTestId("not-joined")).toHaveTextContent("local inventory of gridweave up, whose GPUs cannot be cordoned");
  expect(within(card("local")).getByTestId("not-joined")).toHaveTextContent("cordoned: true");
  await userEvent.click(within(card("gpu-a")).getByRole("button", { name: "Cordon" }));
  expect(await within(card("gpu-a")).findByTestId("cordoned")).toHaveTextContent("Cordoned");
  expect(within(card("gpu-a")).getByRole("status")).toHaveTextContent("no new work");
  await userEvent.click(within(card("gpu-a")).getByRole("button", { name: "Uncordon" }));
  await waitFor(() => expect(within(card("gpu-a")).queryByTestId("cordoned")).toBeNull());
  expect(sent).toEqual([["gpu-a", { cordoned: true }], ["gpu-a", { cordoned: false }]]);
});

test("drain says what still holds the node", async () => {
  let drained = false;
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/nodes", () => HttpResponse.json(inventory(4096, !drained))),
    http.get("*/v1/admin/nodes", () => HttpResponse.json({ nodes: [joined(drained)] })),
    http.post("*/v1/admin/nodes/:name/drain", () => {
      drained = true;
      return HttpResponse.json({ node: joined(true), held_mb: 4096, drained: false });
    }),
  );
  renderApp("/admin/nodes");
  await screen.findByRole("heading", { name: "gpu-a" });
  await userEvent.click(await within(card("gpu-a")).findByRole("button", { name: "Drain" }));
  expect(await within(card("gpu-a")).findByRole("status")).toHaveTextContent("Draining: 4 GiB still held");
  expect(await within(card("gpu-a")).findByTestId("cordoned")).toHaveTextContent("Cordoned, draining (4 GiB held)");
});

test("an unreachable registry still shows the GPUs", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/nodes", () => HttpResponse.json(inventory(0))),
    http.get("*/v1/admin/nodes", () => HttpResponse.json({ error: { code: "service_unavailable", message: "kuberay_service is unavailable: try again" } }, { status: 503 })),
  );
  renderApp("/admin/nodes");
  expect(await screen.findByText(/Node registry: kuberay_service is unavailable/)).toBeInTheDocument();
  expect(screen.getAllByRole("meter")).toHaveLength(2);
  // an unread registry says nothing of which nodes are in it
  expect(screen.queryByTestId("not-joined")).toBeNull();
});

test("heartbeat ages read in seconds, minutes, hours", () => {
  const now = Date.parse("2026-12-01T12:00:00Z");
  expect(age(null, now)).toBe("never");
  expect(age("2026-12-01T11:59:30Z", now)).toBe("30 s");
  expect(age("2026-12-01T11:50:00Z", now)).toBe("10 min");
  expect(age("2026-12-01T09:00:00Z", now)).toBe("3 h");
});

function shared(): Schemas["InventoryResponse"] {
  const base = { vendor: "nvidia", model: "A100", vram_mb: 81_920, schedulable: true, simulated: false };
  return {
    nodes: [
      {
        name: "gpu-a",
        ready: true,
        ...UNDECLARED,
        gpus: [
          {
            ...base,
            index: 0,
            held_mb: 18_192,
            free_mb: 63_728,
            used_mb: 12_000,
            allocations: [
              { kind: "endpoint", name: "greeter-0a1b2c3d4e", display_name: "greeter", user_id: "u-bob", owner: "team-9", vram_mb: 10_000 },
              { kind: "job", name: "job-mine", display_name: "job-mine", user_id: ADMIN.user_id, owner: ADMIN.user_id, vram_mb: 8192 },
            ],
          },
          { ...base, index: 1, vendor: "amd", held_mb: 0, free_mb: 81_920, used_mb: null, allocations: [] },
        ],
      },
    ],
  };
}

/** The nodes page of an admin over ``shared()`` (no registry node). */
function showShared() {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/nodes", () => HttpResponse.json(shared())),
    http.get("*/v1/admin/nodes", () => HttpResponse.json({ nodes: [] })),
  );
  renderApp("/admin/nodes");
}

test("each bar shows used, held and free; an unmeasured GPU says so and invents no figure", async () => {
  showShared();
  const measured = await screen.findByRole("meter", { name: "GPU 0 VRAM held" });
  expect(measured).toHaveAttribute("aria-valuenow", "18192");
  expect(measured).toHaveAttribute("aria-valuetext", "18192 MiB held, 63728 MiB free of 80 GiB; 12000 MiB used");
  expect(measured).toHaveAttribute("data-used-mb", "12000");
  expect(within(measured).getByTestId("used-segment").style.width).toBe(`${(12_000 / 81_920) * 100}%`);
  expect(within(measured).getByTestId("held-segment").style.width).toBe(`${(18_192 / 81_920) * 100}%`);
  const [first, second] = screen.getAllByTestId("gpu") as [HTMLElement, HTMLElement];
  expect(within(first).getByTestId("vram-used")).toHaveTextContent("12000 MiB used");
  expect(within(first).getByTestId("vram-free")).toHaveTextContent("63728 MiB free");
  const unmeasured = screen.getByRole("meter", { name: "GPU 1 VRAM held" });
  expect(unmeasured).toHaveAttribute("data-used-mb", "not measured");
  expect(unmeasured.getAttribute("aria-valuetext")).toContain("use not measured");
  expect(within(unmeasured).queryByTestId("used-segment")).toBeNull();
  expect(within(second).getByTestId("vram-used")).toHaveTextContent("use not measured");
  expect(within(second).getByText("Nothing holds VRAM here.")).toBeInTheDocument();
});

test("the jobs and endpoints sharing a GPU are listed; the admin's own link to their pages", async () => {
  showShared();
  const list = await screen.findByRole("list", { name: "Holding GPU 0" });
  const [endpoint, job] = within(list).getAllByTestId("holder") as [HTMLElement, HTMLElement];
  // another user's endpoint: its name and user, not a link (its page is its user's only)
  expect(endpoint).toHaveTextContent("endpoint greeter · user u-bob · billed to team-9 · 10000 MiB");
  expect(within(endpoint).queryByRole("link")).toBeNull();
  expect(within(job).getByRole("link", { name: "job-mine" })).toHaveAttribute("href", "/jobs/job-mine");
  expect(within(job).getByTestId("holder-vram")).toHaveTextContent("8 GiB");
});

test("each node shows its free CPU and memory; a node that declares none says it has no limit", async () => {
  const gpu = { index: 0, vendor: "nvidia", model: "A100", vram_mb: 81_920, held_mb: 0, free_mb: 81_920, schedulable: true, simulated: false };
  server.use(
    http.get("*/v1/me", () => HttpResponse.json(ADMIN)),
    http.get("*/v1/nodes", () =>
      HttpResponse.json({
        nodes: [
          {
            name: "gpu-a",
            ready: true,
            gpus: [gpu],
            cpu_millis: 16_000,
            cpu_held_millis: 2_500,
            cpu_free_millis: 13_500,
            memory_mb: 65_536,
            memory_held_mb: 12_288,
            memory_free_mb: 53_248,
          },
          { name: "local", ready: true, gpus: [gpu], ...UNDECLARED },
        ],
      }),
    ),
    http.get("*/v1/admin/nodes", () => HttpResponse.json({ nodes: [] })),
  );
  renderApp("/admin/nodes");
  await screen.findByRole("heading", { name: "gpu-a" });
  expect(within(card("gpu-a")).getByTestId("cpu-free")).toHaveTextContent("CPU 13.5 of 16 cores free");
  expect(within(card("gpu-a")).getByTestId("memory-free")).toHaveTextContent("memory 52 GiB of 64 GiB free");
  expect(within(card("local")).getByTestId("cpu-free")).toHaveTextContent("CPU not declared (no limit)");
  expect(within(card("local")).getByTestId("memory-free")).toHaveTextContent("memory not declared (no limit)");
});

test("cores and memory read as people write them", () => {
  expect([cores(16_000), cores(12_500), cores(250), cores(1)]).toEqual(["16", "12.5", "0.25", "0.001"]);
  expect([memory(1536), memory(8192), memory(12_800), memory(522_752)]).toEqual(["1536 MiB", "8 GiB", "12.5 GiB", "510.5 GiB"]);
});
