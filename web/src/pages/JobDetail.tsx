import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { useParams } from "react-router";
import { api, credits, errorMessage, mib, refused, type Schemas, unwrap, when } from "../api/client";
import { Card, PhaseBadge } from "../components/Layout";

export const LOG_PAGE_BYTES = 64 * 1024;
const MAX_LIVE_LINES = 5_000;

type Line = { stream: "stdout" | "stderr"; text: string };

/** Live lines over server-sent events; the browser reconnects after a drop and sends
 * Last-Event-ID, so the platform resumes after the last line shown. */
export function useLiveLog(jobId: string): { lines: Line[]; ended: string | null; connected: boolean } {
  const [lines, setLines] = useState<Line[]>([]);
  const [ended, setEnded] = useState<string | null>(null);
  const [connected, setConnected] = useState(false);
  useEffect(() => {
    setLines([]);
    setEnded(null);
    const source = new EventSource(`/v1/jobs/${encodeURIComponent(jobId)}/logs/stream`);
    const add = (stream: Line["stream"]) => (event: MessageEvent<string>) =>
      setLines((previous) => [...previous, { stream, text: event.data }].slice(-MAX_LIVE_LINES));
    source.addEventListener("stdout", add("stdout"));
    source.addEventListener("stderr", add("stderr"));
    source.addEventListener("end", (event) => {
      setEnded((event as MessageEvent<string>).data);
      source.close();
      setConnected(false);
    });
    source.onopen = () => setConnected(true);
    source.onerror = () => setConnected(false);
    return () => source.close();
  }, [jobId]);
  return { lines, ended, connected };
}

function LiveLog({ jobId }: { jobId: string }) {
  const { lines, ended, connected } = useLiveLog(jobId);
  const bottom = useRef<HTMLDivElement>(null);
  useEffect(() => {
    bottom.current?.scrollIntoView?.({ block: "nearest" });
  }, [lines.length]);
  return (
    <Card title={`Live log ${ended ? `(ended: ${ended})` : connected ? "(following)" : "(connecting…)"}`}>
      <div
        role="log"
        aria-label="Live log"
        aria-live="polite"
        tabIndex={0}
        className="h-72 overflow-auto rounded bg-slate-900 p-3 font-mono text-xs text-slate-100"
      >
        {lines.length === 0 && <p className="text-slate-300">No output yet.</p>}
        {lines.map((line, index) => (
          <div key={index} data-testid="log-line" className={line.stream === "stderr" ? "text-amber-300" : ""}>
            {line.text}
          </div>
        ))}
        <div ref={bottom} />
      </div>
    </Card>
  );
}

function FullLog({ jobId }: { jobId: string }) {
  const [stream, setStream] = useState<"stdout" | "stderr">("stdout");
  const [page, setPage] = useState(0);
  const text = useQuery({
    queryKey: ["log-page", jobId, stream, page],
    queryFn: async () => {
      const answer = await api.GET("/v1/jobs/{job_id}/logs/download", {
        params: { path: { job_id: jobId }, query: { stream, offset: page * LOG_PAGE_BYTES, length: LOG_PAGE_BYTES } },
        parseAs: "text",
      });
      const size = Number(answer.response.headers.get("X-Log-Size") ?? "0");
      return { text: unwrap(answer) as unknown as string, size };
    },
  });
  const pages = Math.max(1, Math.ceil((text.data?.size ?? 0) / LOG_PAGE_BYTES));
  const href = `/v1/jobs/${encodeURIComponent(jobId)}/logs/download?stream=${stream}`;
  return (
    <Card title="Full log">
      <div className="mb-2 flex flex-wrap items-center gap-3 text-sm">
        <label>
          Stream{" "}
          <select className="rounded border border-slate-400 px-2 py-1" value={stream} onChange={(e) => { setStream(e.target.value as "stdout" | "stderr"); setPage(0); }}>
            <option>stdout</option>
            <option>stderr</option>
          </select>
        </label>
        <button type="button" className="rounded border border-slate-400 px-2 py-1 disabled:opacity-40" disabled={page === 0} onClick={() => setPage(page - 1)}>Previous page</button>
        <span>Page {page + 1} of {pages}</span>
        <button type="button" className="rounded border border-slate-400 px-2 py-1 disabled:opacity-40" disabled={page + 1 >= pages} onClick={() => setPage(page + 1)}>Next page</button>
        <a className="text-blue-800 underline" href={href} download>Download {stream}</a>
      </div>
      <pre className="max-h-72 overflow-auto rounded bg-slate-100 p-3 text-xs" tabIndex={0} aria-label="Log page">{text.data?.text || "(empty)"}</pre>
    </Card>
  );
}

type Step = { key: string; label: string; at: string | null | undefined; reason?: string; message?: string; current?: boolean };

/** A condition's transition in words: "Running" when it turned True, "No longer running" when
 * it went back to False (Running once the job ended, Allocated on a requeue), "Running: not
 * known" when Unknown. */
export function conditionLabel(type: string, status: string): string {
  if (status === "True") return type;
  if (status === "False") return `No longer ${type.toLowerCase()}`;
  return `${type}: not known`;
}

/** The phase timeline: the submission, then each condition's last transition, oldest first
 * (a condition that went back to False, as Allocated on a requeue, says so). */
export function timelineSteps(job: Schemas["JobResponse"]): Step[] {
  const moves = [...(job.conditions ?? [])]
    .filter((condition) => condition.type !== "UsageReported" || condition.status === "True")
    .sort((a, b) => a.last_transition_time.localeCompare(b.last_transition_time))
    .map((condition): Step => ({
      key: condition.type,
      label: condition.type === "UsageReported" ? "Usage reported" : conditionLabel(condition.type, condition.status),
      at: condition.last_transition_time,
      reason: condition.reason,
      message: condition.message,
    }));
  const now: Step[] = job.finished ? [] : [{ key: "now", label: `Now: ${job.phase}`, at: null, current: true }];
  return [{ key: "Submitted", label: "Submitted", at: job.created_at }, ...moves, ...now];
}

export function JobDetail() {
  const { jobId = "" } = useParams();
  const queries = useQueryClient();
  const job = useQuery({
    queryKey: ["job", jobId],
    queryFn: async () => unwrap(await api.GET("/v1/jobs/{job_id}", { params: { path: { job_id: jobId } } })),
    // a finished job, or one the API refused (another user's: 404), is not asked again
    refetchInterval: (query) => (query.state.data?.finished || refused(query.state.error) ? false : 2_000),
  });
  const usage = useQuery({
    queryKey: ["usage", "job", jobId],
    enabled: job.data?.finished === true,
    // this job's record only (its hold's reference), however many came after it
    queryFn: async () => unwrap(await api.GET("/v1/usage", { params: { query: { job_id: jobId, limit: 1 } } })),
  });
  if (job.isError) return <p role="alert" className="text-red-700">{errorMessage(job.error)}</p>;
  if (!job.data) return <p>Loading…</p>;
  const data = job.data;
  const cost = usage.data?.records.filter((record) => record.job_id === jobId).reduce((sum, record) => sum + record.cost, 0);
  const steps = timelineSteps(data);
  const cancel = async () => {
    await api.POST("/v1/jobs/{job_id}/cancel", { params: { path: { job_id: jobId } } });
    await queries.invalidateQueries({ queryKey: ["job", jobId] });
  };
  return (
    <div className="space-y-4">
      <div className="flex items-center gap-3">
        <h1 className="font-mono text-xl font-semibold">{data.job_id}</h1>
        <PhaseBadge phase={data.phase} />
        {!data.finished && (
          <button type="button" onClick={cancel} className="rounded bg-red-700 px-3 py-1 text-sm text-white">Cancel</button>
        )}
      </div>
      <div className="grid grid-cols-1 gap-4 md:grid-cols-3">
        <Card title="Timeline">
          <ol className="space-y-2 border-l border-slate-300 pl-3 text-sm" aria-label="Phase timeline">
            {steps.map((step) => (
              <li key={step.key} data-testid="timeline-step">
                <span className="font-medium">{step.label}</span>
                {!step.current && <span className="text-slate-700">: {when(step.at)}</span>}
                {step.reason && <span className="block text-xs text-slate-700">{step.reason}{step.message ? `: ${step.message}` : ""}</span>}
              </li>
            ))}
          </ol>
          {data.attempts > 1 && <p className="mt-2 text-sm">Attempts: {data.attempts}</p>}
          {data.message && <p className="mt-2 text-sm">{data.reason}: {data.message}</p>}
        </Card>
        <Card title="Placement">
          <p className="text-sm">Node: <span data-testid="job-node">{data.node ?? "—"}</span></p>
          <p className="text-sm">GPUs: {data.gpu_indices.length ? data.gpu_indices.join(", ") : "—"} ({data.gpu_count} × {mib(data.vram_mb)}, {data.vendor})</p>
        </Card>
        <Card title="Cost">
          <p className="text-sm">Billed seconds: {data.billed_seconds ?? "—"}</p>
          <p className="text-sm">Wall seconds: {data.wall_seconds?.toFixed(2) ?? "—"}</p>
          <p className="text-sm">Cost: {cost === undefined ? (data.finished ? "settling…" : "—") : credits(cost)}</p>
          {data.hold_amount != null && <p className="text-sm">Held: {credits(data.hold_amount)}</p>}
        </Card>
      </div>
      <LiveLog jobId={jobId} />
      <FullLog jobId={jobId} />
    </div>
  );
}
