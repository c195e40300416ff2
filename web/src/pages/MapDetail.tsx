import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useParams } from "react-router";
import { api, credits, errorMessage, refused, unwrap, when } from "../api/client";
import { Card, PhaseBadge } from "../components/Layout";
import { MapProgress } from "../components/MapProgress";
import { TableHead } from "../components/Table";

/** One map: its progress, its workers (each a job: node and GPUs, phase, its share done),
 * and cancel while it runs. */
export function MapDetail() {
  const { mapId = "" } = useParams();
  const queries = useQueryClient();
  const [message, setMessage] = useState<string | null>(null);
  const status = useQuery({
    queryKey: ["map", mapId],
    queryFn: async () => unwrap(await api.GET("/v1/maps/{map_id}", { params: { path: { map_id: mapId } } })),
    // a finished map, or one the API refused (another user's: 404), is not asked again
    refetchInterval: (query) => (query.state.data?.finished || refused(query.state.error) ? false : 2_000),
  });
  if (status.isError) return <p role="alert" className="text-red-700">{errorMessage(status.error)}</p>;
  if (!status.data) return <p>Loading…</p>;
  const data = status.data;
  const cancel = async () => {
    const answer = await api.POST("/v1/maps/{map_id}/cancel", { params: { path: { map_id: mapId } } });
    setMessage(answer.error ? errorMessage(answer.error) : "Cancelled: the inputs done stay readable.");
    await queries.invalidateQueries({ queryKey: ["map", mapId] });
    await queries.invalidateQueries({ queryKey: ["maps"] });
  };
  return (
    <div className="space-y-4">
      <div className="flex items-center gap-3">
        <h1 className="font-mono text-xl font-semibold">{data.map_id}</h1>
        <PhaseBadge phase={data.phase} />
        {!data.finished && (
          <button type="button" onClick={cancel} className="rounded bg-red-700 px-3 py-1 text-sm text-white">Cancel</button>
        )}
      </div>
      {message && <p role="status" className="text-sm">{message}</p>}
      <div className="grid grid-cols-1 gap-4 md:grid-cols-2">
        <Card title="Progress">
          <MapProgress status={data} />
          <p className="mt-2 text-sm">
            {data.items.toLocaleString("en-US")} inputs in {data.chunks.toLocaleString("en-US")} chunks of {data.chunk_items.toLocaleString("en-US")}
          </p>
        </Card>
        <Card title="Map">
          <p className="text-sm">Function: {data.function_name ?? "—"}</p>
          <p className="text-sm">Created: {when(data.created_at)}</p>
          {data.hold_amount != null && <p className="text-sm">Held: {credits(data.hold_amount)}</p>}
        </Card>
      </div>
      <Card title="Workers">
        <table className="w-full border-collapse text-sm">
          <TableHead
            columns={["Worker", "Phase", "Node", "GPUs", { title: "Done", right: true }, { title: "Failed", right: true }, { title: "Attempts", right: true }, "Reason"]}
          />
          <tbody>
            {data.workers.map((worker) => (
              <tr key={worker.job_id} className="border-b border-slate-100" data-testid="worker-row">
                <td className="p-2 font-mono"><Link className="text-blue-800 underline" to={`/jobs/${worker.job_id}`}>{worker.job_id}</Link></td>
                <td className="p-2"><PhaseBadge phase={worker.phase} /></td>
                <td className="p-2">{worker.node ?? "—"}</td>
                <td className="p-2">{worker.gpu_indices?.length ? worker.gpu_indices.join(", ") : "—"}</td>
                <td className="p-2 text-right">{worker.done.toLocaleString("en-US")}</td>
                <td className="p-2 text-right">{worker.failed.toLocaleString("en-US")}</td>
                <td className="p-2 text-right">{worker.attempts}</td>
                <td className="p-2">{worker.reason ? `${worker.reason}${worker.message ? `: ${worker.message}` : ""}` : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
    </div>
  );
}
