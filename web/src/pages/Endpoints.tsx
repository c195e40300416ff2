import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, errorMessage, unwrap, when, type Schemas } from "../api/client";

/** The phase, why it stopped or waits (``Stopped (OutOfCredits)``), and why a woken one
 * waits (``Stopped (Idle), waking: WaitingForGpu``), as `gridweave endpoints` says it. */
export function endpointState(endpoint: Schemas["EndpointResponse"]): string {
  let state = endpoint.phase as string;
  if (endpoint.reason && endpoint.phase !== "Running") state += ` (${endpoint.reason})`;
  if (endpoint.waking_reason) state += `, waking: ${endpoint.waking_reason}`;
  return state;
}

export function Endpoints() {
  const endpoints = useQuery({
    queryKey: ["endpoints"],
    queryFn: async () => unwrap(await api.GET("/v1/endpoints")),
    refetchInterval: 10_000,
  });
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Endpoints</h1>
      {endpoints.isError && <p role="alert" className="text-red-700">{errorMessage(endpoints.error)}</p>}
      {endpoints.data && endpoints.data.endpoints.length === 0 && <p className="text-slate-600">No endpoints. Deploy one with the SDK or the CLI.</p>}
      <table className="w-full bg-white text-sm">
        <thead>
          <tr className="text-left"><th className="p-2">Name</th><th className="p-2">Model</th><th className="p-2">Phase</th><th className="p-2">Health</th><th className="p-2">Replicas</th><th className="p-2">Node</th><th className="p-2">Started</th></tr>
        </thead>
        <tbody>
          {endpoints.data?.endpoints.map((endpoint) => (
            <tr key={endpoint.endpoint_id} className="border-t border-slate-100">
              <td className="p-2"><Link className="font-mono text-blue-800 underline" to={`/endpoints/${encodeURIComponent(endpoint.name)}`}>{endpoint.name}</Link></td>
              <td className="p-2">{endpoint.model ?? endpoint.mode}</td>
              <td className="p-2" data-testid="endpoint-state">{endpointState(endpoint)}</td>
              <td className="p-2">{endpoint.health}</td>
              <td className="p-2">{endpoint.ready_replicas} ready ({endpoint.min_replicas}–{endpoint.max_replicas})</td>
              <td className="p-2">{endpoint.node ?? "—"}</td>
              <td className="p-2">{when(endpoint.started_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
