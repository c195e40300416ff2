import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, count, errorMessage, unwrap, when } from "../api/client";
import { PhaseBadge } from "../components/Layout";
import { MapProgress } from "../components/MapProgress";
import { Pager, useCursorPages } from "../components/Pager";
import { TableHead } from "../components/Table";

export const MAPS_PAGE_SIZE = 20;

/** The user's maps, newest first, a page at a time, each with its progress. */
export function Maps() {
  const pages = useCursorPages<string>();
  const cursor = pages.cursor;
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
        <TableHead columns={["Map", "Function", "Phase", "Progress", "Workers", "Created"]} />
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
      <Pager pages={pages} next={page.data?.next_cursor} />
    </div>
  );
}
