import { keepPreviousData, queryOptions, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router";
import { api, count, errorMessage, type JobPhase, mib, type Schemas, unwrap, when } from "../api/client";
import { takeEarly } from "../api/early";
import { PhaseBadge } from "../components/Layout";
import { Pager, useCursorPages } from "../components/Pager";
import { TableHead } from "../components/Table";

export const PAGE_SIZE = 50;
const PHASES: JobPhase[] = ["Pending", "Allocated", "Running", "Completed", "Failed", "Cancelled", "TimedOut"];
const FINISHED = new Set<string>(["Completed", "Failed", "Cancelled", "TimedOut"]);

type Filters = { phase: JobPhase | ""; from: string; to: string };
export const NO_FILTERS: Filters = { phase: "", from: "", to: "" };

/** The query of one page of jobs (also prefetched beside /v1/me when /jobs is opened). */
export function jobsPageQuery({ phase, from, to }: Filters, cursor: string | undefined) {
  return queryOptions({
    queryKey: ["jobs", "page", { phase, from, to }, cursor],
    queryFn: async () =>
      (!cursor && !phase && !from && !to
        ? await takeEarly<Schemas["JobListResponse"]>(`/v1/jobs?limit=${PAGE_SIZE}`)
        : undefined) ??
      unwrap(
        await api.GET("/v1/jobs", {
          params: {
            query: {
              limit: PAGE_SIZE,
              ...(cursor ? { cursor } : {}),
              ...(phase ? { phase: [phase] } : {}),
              ...(from ? { created_after: new Date(from).toISOString() } : {}),
              ...(to ? { created_before: new Date(to).toISOString() } : {}),
            },
          },
        }),
      ),
  });
}

/** A native checkbox: accessible as it is, and no primitive library on the page's script. */
function Tick({ checked, onChange, label }: { checked: boolean; onChange: (value: boolean) => void; label: string }) {
  return (
    <input
      type="checkbox"
      checked={checked}
      onChange={(event) => onChange(event.target.checked)}
      aria-label={label}
      className="h-4 w-4 accent-slate-800"
    />
  );
}

export function Jobs() {
  const queries = useQueryClient();
  const [phase, setPhase] = useState<JobPhase | "">("");
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const pages = useCursorPages<string>();
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [message, setMessage] = useState<string | null>(null);
  const page = useQuery({
    ...jobsPageQuery({ phase, from, to }, pages.cursor),
    placeholderData: keepPreviousData,
    refetchInterval: 5_000, // paused while the tab is hidden
  });
  const refilter = (change: () => void) => {
    change();
    pages.reset();
    setSelected(new Set());
  };
  const cancel = async (ids: string[]) => {
    setMessage(null);
    const answers = await Promise.all(
      ids.map((id) => api.POST("/v1/jobs/{job_id}/cancel", { params: { path: { job_id: id } } })),
    );
    const refused = answers.filter((answer) => answer.error);
    setMessage(
      refused.length
        ? `${ids.length - refused.length} cancelled; ${refused.length} refused: ${errorMessage(refused[0]?.error)}`
        : `${ids.length} cancelled`,
    );
    setSelected(new Set());
    await queries.invalidateQueries({ queryKey: ["jobs"] });
  };
  const jobs = page.data?.jobs ?? [];
  const cancellable = jobs.filter((job) => !FINISHED.has(job.phase));
  const toggle = (id: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(id);
    else next.delete(id);
    setSelected(next);
  };
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Jobs</h1>
      <div className="flex flex-wrap items-end gap-4 text-sm">
        <label className="flex flex-col">
          Phase
          <select className="rounded border border-slate-400 px-2 py-1" value={phase} onChange={(e) => refilter(() => setPhase(e.target.value as JobPhase | ""))}>
            <option value="">Any</option>
            {PHASES.map((value) => <option key={value}>{value}</option>)}
          </select>
        </label>
        <label className="flex flex-col">
          Created from
          <input type="datetime-local" className="rounded border border-slate-400 px-2 py-1" value={from} onChange={(e) => refilter(() => setFrom(e.target.value))} />
        </label>
        <label className="flex flex-col">
          Created before
          <input type="datetime-local" className="rounded border border-slate-400 px-2 py-1" value={to} onChange={(e) => refilter(() => setTo(e.target.value))} />
        </label>
        <button
          type="button"
          disabled={selected.size === 0}
          onClick={() => cancel([...selected])}
          className="rounded bg-red-700 px-3 py-1.5 text-white disabled:opacity-40"
        >
          Cancel selected ({selected.size})
        </button>
        <span className="text-slate-700" data-testid="jobs-total">{page.data ? count(page.data.total ?? jobs.length, "job") : ""}</span>
      </div>
      {message && <p role="status" className="text-sm">{message}</p>}
      {page.isError && <p role="alert" className="text-red-700">{errorMessage(page.error)}</p>}
      <table className="w-full border-collapse bg-white text-sm">
        <TableHead
          columns={[
            {
              key: "select",
              title: (
                <Tick
                  label="Select every cancellable job on this page"
                  checked={cancellable.length > 0 && cancellable.every((job) => selected.has(job.job_id))}
                  onChange={(on) => setSelected(on ? new Set(cancellable.map((job) => job.job_id)) : new Set())}
                />
              ),
            },
            "Job",
            "Function",
            "Phase",
            "GPU",
            "Created",
            { key: "actions", title: <span className="sr-only">Actions</span> },
          ]}
        />
        <tbody>
          {jobs.map((job) => (
            <tr key={job.job_id} className="border-b border-slate-100" data-testid="job-row">
              <td className="p-2">
                {!FINISHED.has(job.phase) && (
                  <Tick label={`Select ${job.job_id}`} checked={selected.has(job.job_id)} onChange={(on) => toggle(job.job_id, on)} />
                )}
              </td>
              <td className="p-2 font-mono"><Link className="text-blue-800 underline" to={`/jobs/${job.job_id}`}>{job.job_id}</Link></td>
              <td className="p-2">{job.function_name ?? "—"}</td>
              <td className="p-2"><PhaseBadge phase={job.phase} /></td>
              <td className="p-2">{job.gpu_count} × {mib(job.vram_mb)} {job.vendor}</td>
              <td className="p-2">{when(job.created_at)}</td>
              <td className="p-2">
                {!FINISHED.has(job.phase) && (
                  <button type="button" className="text-red-800 underline" onClick={() => cancel([job.job_id])}>Cancel</button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {page.data && jobs.length === 0 && <p className="text-slate-600">No jobs match.</p>}
      <Pager pages={pages} next={page.data?.next_cursor} />
    </div>
  );
}
