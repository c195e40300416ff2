import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router";
import { api, errorMessage, mib, type Schemas, unwrap } from "../../api/client";
import { Card } from "../../components/Layout";

type Gpu = Schemas["InventoryGpuResponse"];
type Holder = Schemas["InventoryAllocationResponse"];

/** Percent of ``total`` that ``part`` is, within 0..100. */
function percent(part: number, total: number): number {
  return total > 0 ? Math.min(100, Math.max(0, (part / total) * 100)) : 0;
}

/** One GPU's VRAM in one bar: measured in use (dark), held by jobs and endpoints (mid) and free
 * (light). What nothing measures (AMD, declared and simulated GPUs) says so; no figure is made up. */
export function VramBar({ gpu }: { gpu: Gpu }) {
  const held = Math.min(gpu.held_mb, gpu.vram_mb);
  const used = gpu.used_mb ?? null;
  const usedText = used === null ? "use not measured" : `${mib(used)} used`;
  return (
    <div>
      <div className="flex justify-between text-xs">
        <span>GPU {gpu.index}: {gpu.model}{gpu.simulated ? " (simulated)" : ""}</span>
        <span data-testid="vram-figures">
          <span data-testid="vram-used">{usedText}</span> · <span data-testid="vram-held">{mib(held)} held</span> ·{" "}
          <span data-testid="vram-free">{mib(gpu.free_mb)} free</span> of {mib(gpu.vram_mb)}
        </span>
      </div>
      <div
        role="meter"
        aria-label={`GPU ${gpu.index} VRAM held`}
        aria-valuemin={0}
        aria-valuemax={gpu.vram_mb}
        aria-valuenow={held}
        aria-valuetext={`${mib(held)} held, ${mib(gpu.free_mb)} free of ${mib(gpu.vram_mb)}; ${usedText}`}
        data-used-mb={used ?? "not measured"}
        data-held-mb={held}
        data-free-mb={gpu.free_mb}
        className="relative mt-1 h-3 w-full overflow-hidden rounded bg-green-200"
      >
        <div data-testid="held-segment" className="absolute inset-y-0 left-0 bg-blue-400" style={{ width: `${percent(held, gpu.vram_mb)}%` }} />
        {used !== null && (
          <div data-testid="used-segment" className="absolute inset-y-0 left-0 bg-blue-900" style={{ width: `${percent(used, gpu.vram_mb)}%` }} />
        )}
      </div>
      <p className="mt-0.5 flex gap-3 text-xs text-slate-700" aria-hidden="true">
        {used !== null && <span><span className="mr-1 inline-block h-2 w-2 rounded-sm bg-blue-900" />used (measured)</span>}
        <span><span className="mr-1 inline-block h-2 w-2 rounded-sm bg-blue-400" />held</span>
        <span><span className="mr-1 inline-block h-2 w-2 rounded-sm bg-green-200" />free</span>
      </p>
    </div>
  );
}

type InventoryNode = Schemas["InventoryNodeResponse"];

/** Thousandths of a core as cores: 16, 12.5, 0.25. */
export function cores(millis: number): string {
  return `${Number((millis / 1000).toFixed(3))}`;
}

/** Memory for people: whole GiB, else GiB to a tenth from 10 GiB up, else MiB (as VRAM). */
export function memory(mb: number): string {
  return mb % 1024 === 0 || mb < 10 * 1024 ? mib(mb) : `${(mb / 1024).toFixed(1)} GiB`;
}

/** A node's free CPU and memory of what it declares; a node that declares none has no limit. */
export function NodeCapacity({ node }: { node: InventoryNode }) {
  const cpu =
    node.cpu_millis == null || node.cpu_free_millis == null
      ? "CPU not declared (no limit)"
      : `CPU ${cores(node.cpu_free_millis)} of ${cores(node.cpu_millis)} cores free`;
  const mem =
    node.memory_mb == null || node.memory_free_mb == null
      ? "memory not declared (no limit)"
      : `memory ${memory(node.memory_free_mb)} of ${memory(node.memory_mb)} free`;
  return (
    <p className="mb-2 text-sm text-slate-700">
      <span data-testid="cpu-free">{cpu}</span> · <span data-testid="memory-free">{mem}</span>
    </p>
  );
}

/** What holds a GPU's VRAM; a job or endpoint of the signed-in admin links to its page (the
 * detail pages show one's own work only). */
export function Holders({ gpu, userId }: { gpu: Gpu; userId: string | undefined }) {
  const holders: Holder[] = gpu.allocations ?? [];
  if (holders.length === 0) return <p className="text-xs text-slate-700">Nothing holds VRAM here.</p>;
  return (
    <ul aria-label={`Holding GPU ${gpu.index}`} className="space-y-0.5 text-xs">
      {holders.map((holder) => {
        const shown = holder.display_name ?? holder.name;
        const page = holder.kind === "job" ? `/jobs/${shown}` : `/endpoints/${shown}`;
        return (
          <li key={`${holder.kind}/${holder.name}`} data-testid="holder">
            <span className="font-medium">{holder.kind}</span>{" "}
            {holder.user_id !== null && holder.user_id === userId ? (
              <Link to={page} className="text-blue-800 underline">{shown}</Link>
            ) : (
              <span>{shown}</span>
            )}
            {" · "}
            <span data-testid="holder-user">user {holder.user_id ?? "not known yet"}</span>
            {holder.owner !== null && holder.owner !== holder.user_id && <span> · billed to {holder.owner}</span>}
            {" · "}
            <span data-testid="holder-vram">{mib(holder.vram_mb)}</span>
          </li>
        );
      })}
    </ul>
  );
}

/** How long ago ``at`` was, in words ("12 s", "3 min", "2 h"). */
export function age(at: string | null | undefined, now: number = Date.now()): string {
  if (!at) return "never";
  const seconds = Math.max(0, Math.round((now - new Date(at).getTime()) / 1000));
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

type Joined = Schemas["NodeResponse"];

/** Cordon, uncordon and drain of one node of the registry; what a drain still waits for. */
function NodeActions({ joined, heldMb }: { joined: Joined; heldMb: number }) {
  const queries = useQueryClient();
  const [message, setMessage] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const path = { params: { path: { name: joined.name } } };
  const act = async (call: () => Promise<{ error?: unknown }>, done: string) => {
    setBusy(true);
    const { error } = await call();
    setBusy(false);
    setMessage(error ? errorMessage(error) : done);
    await queries.invalidateQueries({ queryKey: ["joined-nodes"] });
    await queries.invalidateQueries({ queryKey: ["nodes"] });
  };
  const cordon = (cordoned: boolean) =>
    act(() => api.PUT("/v1/admin/nodes/{name}/cordon", { ...path, body: { cordoned } }), cordoned ? "Cordoned: no new work is placed here" : "Uncordoned");
  const drain = async () => {
    setBusy(true);
    const { data, error } = await api.POST("/v1/admin/nodes/{name}/drain", path);
    setBusy(false);
    setMessage(error || !data ? errorMessage(error) : data.drained ? "Drained: nothing runs here" : `Draining: ${mib(data.held_mb)} still held by running work`);
    await queries.invalidateQueries({ queryKey: ["joined-nodes"] });
    await queries.invalidateQueries({ queryKey: ["nodes"] });
  };
  const button = "rounded border border-slate-400 px-2 py-0.5 text-sm disabled:opacity-50";
  return (
    <div className="mb-2 flex flex-wrap items-center gap-2 text-sm">
      <span className="text-slate-700">heartbeat {age(joined.last_heartbeat_at)} ago</span>
      {joined.cordoned && (
        <span data-testid="cordoned" className="rounded bg-amber-100 px-2 py-0.5 text-xs font-medium text-amber-900">
          {heldMb > 0 ? `Cordoned, draining (${mib(heldMb)} held)` : "Cordoned"}
        </span>
      )}
      {joined.cordoned ? (
        <button type="button" className={button} disabled={busy} onClick={() => cordon(false)}>Uncordon</button>
      ) : (
        <button type="button" className={button} disabled={busy} onClick={() => cordon(true)}>Cordon</button>
      )}
      <button type="button" className={button} disabled={busy} onClick={drain}>Drain</button>
      {message && <span role="status">{message}</span>}
    </div>
  );
}

/** A node the gateway lists but no join key joined: its cordon and drain buttons disabled,
 * with why and where such a node is cordoned instead (the platform answers 409 the same). */
function NotJoined({ name }: { name: string }) {
  const why = `not-joined-${name}`;
  const button = "rounded border border-slate-300 px-2 py-0.5 text-sm text-slate-500";
  return (
    <div className="mb-2 space-y-1 text-sm">
      <div className="flex gap-2">
        <button type="button" className={button} disabled aria-describedby={why}>Cordon</button>
        <button type="button" className={button} disabled aria-describedby={why}>Drain</button>
      </div>
      <p id={why} data-testid="not-joined" className="text-xs text-slate-700">
        Not in the node registry: cordon and drain are for nodes joined with a join key. This node is the gateway&apos;s own
        machine (the local inventory of <code>gridweave up</code>, whose GPUs cannot be cordoned) or a node of its
        inventory file (cordon it in that file: <code>cordoned: true</code>).
      </p>
    </div>
  );
}

export function Nodes() {
  const nodes = useQuery({ queryKey: ["nodes"], queryFn: async () => unwrap(await api.GET("/v1/nodes")), refetchInterval: 5_000 });
  // the node registry (heartbeats, cordons): absent with a local or file inventory
  const joined = useQuery({
    queryKey: ["joined-nodes"],
    queryFn: async () => unwrap(await api.GET("/v1/admin/nodes")),
    refetchInterval: 5_000,
  });
  const me = useQueryClient().getQueryData<Schemas["UserResponse"]>(["me"]);
  const registry = new Map((joined.data?.nodes ?? []).map((node) => [node.name, node]));
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Nodes</h1>
      <p className="text-sm text-slate-700">
        Cordon: no new work is placed on the node; what runs there stays. Drain: cordon, then let running jobs and endpoints finish
        (nothing is cancelled); the node is drained when no VRAM is held on it.
      </p>
      {nodes.isError && <p role="alert" className="text-red-700">{errorMessage(nodes.error)}</p>}
      {joined.isError && <p className="text-sm text-slate-700">Node registry: {errorMessage(joined.error)}</p>}
      {nodes.data?.nodes.map((node) => {
        const entry = registry.get(node.name);
        const held = node.gpus.reduce((sum, gpu) => sum + gpu.held_mb, 0);
        return (
          <Card key={node.name} title={node.name}>
            <p className={`mb-2 text-sm font-medium ${node.ready ? "text-green-800" : "text-red-700"}`}>{node.ready ? "Ready" : "NotReady"}</p>
            <NodeCapacity node={node} />
            {entry ? (
              <NodeActions joined={entry} heldMb={held} />
            ) : joined.isSuccess ? (
              <NotJoined name={node.name} />
            ) : null}
            <div className="space-y-3">
              {node.gpus.map((gpu) => (
                <div key={gpu.index} data-testid="gpu" className="space-y-1">
                  <VramBar gpu={gpu} />
                  <Holders gpu={gpu} userId={me?.user_id} />
                </div>
              ))}
            </div>
          </Card>
        );
      })}
    </div>
  );
}
