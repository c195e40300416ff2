import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router";
import { api, count, errorMessage, type Schemas, unwrap, when } from "../api/client";
import { PhaseBadge } from "../components/Layout";

export type MapStatus = Schemas["MapResponse"];
export const MAPS_PAGE_SIZE = 20;

/** A map's progress as a bar: done (green) and failed (red) of all its inputs, with the
 * counts beside it ("40 / 100 done, 2 failed"). */
export function MapProgress({ status }: { status: MapStatus }) {
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

/** The user's maps, newest first, a page at a time, each with its progress. */
export function Maps() {
  const [cursors, setCursors] = useState<string[]>([]); // the cursor of each page after the first
  const cursor = cursors.at(-1);
  const page = useQuery({
    queryKey: ["maps", "page", cursor],
    queryFn: async () =>
      unwrap(await api.GET("/v1/maps", { params: { query: { limit: MAPS_PAGE_SIZE, ...(cursor ? { cursor } : {}) } } })),
    placeholderData: keepPreviousData,
    refetchInterval: 5_000, // paused while the tab is hidden
  });
  const maps = page.data?.maps ?? [];
  return (
    <div className="space-y-4">
      <div className="flex items-end gap-4">
        <h1 className="text-2xl font-semibold">Maps</h1>
        <span className="text-sm text-slate-700" data-testid="maps-total">{page.data ? count(page.data.total, "map") : ""}</span>
      </div>
      <p className="text-sm text-slate-700">
        A map runs one function over many inputs on several workers; each worker is also listed on the <Link className="text-blue-800 underline" to="/jobs">Jobs</Link> page.
      </p>
      {page.isError && <p role="alert" className="text-red-700">{errorMessage(page.error)}</p>}
      <table className="w-full border-collapse bg-white text-sm">
        <thead>
          <tr className="border-b border-slate-300 text-left">
            <th className="p-2">Map</th>
            <th className="p-2">Function</th>
            <th className="p-2">Phase</th>
            <th className="p-2">Progress</th>
            <th className="p-2">Workers</th>
            <th className="p-2">Created</th>
          </tr>
        </thead>
        <tbody>
          {maps.map((status) => (
            <tr key={status.map_id} className="border-b border-slate-100" data-testid="map-row">
              <td className="p-2 font-mono"><Link className="text-blue-800 underline" to={`/maps/${status.map_id}`}>{status.map_id}</Link></td>
              <td className="p-2">{status.function_name ?? "—"}</td>
              <td className="p-2"><PhaseBadge phase={status.phase} /></td>
              <td className="p-2"><MapProgress status={status} /></td>
              <td className="p-2">{status.workers.filter((worker) => worker.phase === "Running").length} of {count(status.workers.length, "worker")} running</td>
              <td className="p-2">{when(status.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {page.data && maps.length === 0 && <p className="text-slate-600">No maps yet.</p>}
      <div className="flex gap-2">
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))} className="rounded border border-slate-400 px-3 py-1 disabled:opacity-40">
          Previous
        </button>
        <button
          type="button"
          disabled={!page.data?.next_cursor}
          onClick={() => page.data?.next_cursor && setCursors([...cursors, page.data.next_cursor])}
          className="rounded border border-slate-400 px-3 py-1 disabled:opacity-40"
        >
          Next
        </button>
      </div>
    </div>
  );
}
