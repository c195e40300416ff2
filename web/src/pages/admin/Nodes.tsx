import { useQuery } from "@tanstack/react-query";
import { api, errorMessage, type Schemas, unwrap } from "../../api/client";
import { Card } from "../../components/Layout";

/** One GPU's VRAM: held by jobs and endpoints, and free (MB). */
export function VramBar({ gpu }: { gpu: Schemas["InventoryGpuResponse"] }) {
  const held = Math.min(gpu.held_mb, gpu.vram_mb);
  const percent = gpu.vram_mb ? (held / gpu.vram_mb) * 100 : 0;
  return (
    <div>
      <div className="flex justify-between text-xs">
        <span>GPU {gpu.index}: {gpu.model}{gpu.simulated ? " (simulated)" : ""}</span>
        <span data-testid="vram-figures">{held} MB held · {gpu.free_mb} MB free of {gpu.vram_mb} MB</span>
      </div>
      <div
        role="meter"
        aria-label={`GPU ${gpu.index} VRAM held`}
        aria-valuemin={0}
        aria-valuemax={gpu.vram_mb}
        aria-valuenow={held}
        data-held-mb={held}
        className="mt-1 h-3 w-full overflow-hidden rounded bg-green-200"
      >
        <div className="h-full bg-blue-800" style={{ width: `${percent}%` }} />
      </div>
    </div>
  );
}

export function Nodes() {
  const nodes = useQuery({ queryKey: ["nodes"], queryFn: async () => unwrap(await api.GET("/v1/nodes")), refetchInterval: 5_000 });
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Nodes</h1>
      {nodes.isError && <p role="alert" className="text-red-700">{errorMessage(nodes.error)}</p>}
      {nodes.data?.nodes.map((node) => (
        <Card key={node.name} title={node.name}>
          <p className={`mb-2 text-sm font-medium ${node.ready ? "text-green-800" : "text-red-700"}`}>{node.ready ? "Ready" : "NotReady"}</p>
          <div className="space-y-3">
            {node.gpus.map((gpu) => <VramBar key={gpu.index} gpu={gpu} />)}
          </div>
        </Card>
      ))}
    </div>
  );
}
