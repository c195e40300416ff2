import type { Schemas } from "../api/client";

/** A map's progress as a bar: done (green) and failed (red) of all its inputs, with the counts
 * beside it ("40 / 100 done, 2 failed"); the maps' list and a map's page show it. */
export function MapProgress({ status }: { status: Schemas["MapResponse"] }) {
  const share = (value: number) => (status.items > 0 ? (100 * value) / status.items : 0);
  const label = `${status.done.toLocaleString("en-US")} / ${status.items.toLocaleString("en-US")} done`;
  return (
    <div className="flex min-w-48 items-center gap-2">
      <div
        role="progressbar"
        aria-label={`${status.map_id} progress`}
        aria-valuemin={0}
        aria-valuemax={status.items}
        aria-valuenow={status.done + status.failed}
        aria-valuetext={`${label}, ${status.failed} failed`}
        className="flex h-2.5 w-32 overflow-hidden rounded bg-slate-200"
      >
        <div className="bg-green-600" style={{ width: `${share(status.done)}%` }} />
        <div className="bg-red-600" style={{ width: `${share(status.failed)}%` }} />
      </div>
      <span className="whitespace-nowrap text-xs" data-testid="map-progress">
        {label}
        {status.failed > 0 && <span className="text-red-800">, {status.failed.toLocaleString("en-US")} failed</span>}
      </span>
    </div>
  );
}
