import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, credits, day, errorMessage, fieldErrors, type Schemas, unwrap } from "../api/client";
import { Card } from "../components/Layout";

type Limits = Schemas["SpendingLimitsResponse"];
type Field = "monthly_cap" | "per_job_cap";

/** The monthly cap's share spent (held money included) at which the page warns, in percent. */
export const WARN_AT_PERCENT = 80;
const MICRO = 1_000_000n;
const QUERY_KEY = ["spending-limits"] as const;

const FIELDS: readonly { name: Field; label: string }[] = [
  { name: "monthly_cap", label: "Monthly cap (credits)" },
  { name: "per_job_cap", label: "Per-job cap (credits)" },
];

/** Credits typed in a field ("50", "2.5") as micro-credits, exactly (no float rounding); null
 * for a blank field (no cap); a string saying why for text that is not a cap. */
export function microCredits(text: string): number | null | string {
  const value = text.trim();
  if (value === "") return null;
  const match = /^(\d+)(?:\.(\d{0,6}))?$/.exec(value);
  if (!match) return /^\d+\.\d{7,}$/.test(value) ? "at most 6 decimals (1 micro-credit)" : "not a number of credits (blank: no cap)";
  const micro = BigInt(match[1]!) * MICRO + BigInt((match[2] ?? "").padEnd(6, "0"));
  return micro > BigInt(Number.MAX_SAFE_INTEGER) ? "too large" : Number(micro);
}

/** Micro-credits as the form's text: whole credits and up to 6 decimals, blank for no cap. */
export function capText(micro: number | null): string {
  return micro === null ? "" : credits(micro).replace(/,/g, "");
}

/** The month's spending as a share of the monthly cap, in whole percent (null: no cap). */
export function spentPercent(limits: Limits): number | null {
  const cap = limits.monthly_cap;
  if (cap === null) return null;
  return cap === 0 ? 100 : Math.floor((limits.spent * 100) / cap);
}

function LimitsForm({ limits }: { limits: Limits }) {
  const queries = useQueryClient();
  const [text, setText] = useState<Record<Field, string>>({ monthly_cap: capText(limits.user_monthly_cap), per_job_cap: capText(limits.user_per_job_cap) });
  const [refused, setRefused] = useState<Record<string, string>>({});
  const [message, setMessage] = useState<string | null>(null);
  const save = async (event: React.FormEvent) => {
    event.preventDefault();
    const parsed = { monthly_cap: microCredits(text.monthly_cap), per_job_cap: microCredits(text.per_job_cap) };
    const unreadable = Object.fromEntries(Object.entries(parsed).filter(([, value]) => typeof value === "string")) as Record<string, string>;
    setRefused(unreadable);
    if (Object.keys(unreadable).length) return setMessage("Not saved.");
    const body = parsed as { monthly_cap: number | null; per_job_cap: number | null };
    const { data, error } = await api.PUT("/v1/account/spending-limits", { body });
    if (error || !data) {
      setRefused(fieldErrors(error));
      return setMessage(`Not saved. ${errorMessage(error)}`);
    }
    queries.setQueryData(QUERY_KEY, data);
    setMessage("Spending limits saved.");
  };
  return (
    <form onSubmit={save} noValidate className="mt-3 flex flex-wrap items-end gap-3 text-sm">
      {FIELDS.map(({ name, label }) => (
        <div key={name}>
          <label className="block" htmlFor={`spending-${name}`}>{label}</label>
          <input
            id={`spending-${name}`}
            className="w-32 rounded border border-slate-400 px-2 py-1 aria-[invalid=true]:border-red-700"
            inputMode="decimal"
            placeholder="no cap"
            value={text[name]}
            aria-invalid={name in refused}
            onChange={(e) => setText({ ...text, [name]: e.target.value })}
          />
          {name in refused && <p className="text-red-700" data-testid="spending-field-error">{label}: {refused[name]}</p>}
        </div>
      ))}
      <button type="submit" className="rounded bg-slate-900 px-3 py-1 text-white">Save caps</button>
      {message && <p role="status">{message}</p>}
    </form>
  );
}

/** This month's spending against the caps: a bar of the monthly cap, an alert from 80%, and
 * a form for your own caps (an admin's, when lower, are in force and yours cannot pass them). */
export function SpendingLimits() {
  const limits = useQuery({ queryKey: QUERY_KEY, queryFn: async () => unwrap(await api.GET("/v1/account/spending-limits")), refetchInterval: 10_000 });
  const data = limits.data;
  const percent = data ? spentPercent(data) : null;
  return (
    <Card title="Spending limits">
      {limits.isError && <p role="alert" className="text-sm text-red-700">{errorMessage(limits.error)}</p>}
      {data && (
        <div className="space-y-2 text-sm">
          <p data-testid="spending-spent">
            Spent since {day(data.month_start)}: {credits(data.spent)} credits (held included)
            {data.monthly_cap === null ? ", no monthly cap" : ` of a monthly cap of ${credits(data.monthly_cap)}`}
          </p>
          {percent !== null && (
            <div
              role="progressbar"
              aria-label="Spent of the monthly cap"
              aria-valuemin={0}
              aria-valuemax={100}
              aria-valuenow={Math.min(percent, 100)}
              className="h-3 w-full rounded bg-slate-200"
            >
              <div className={`h-3 rounded ${percent >= WARN_AT_PERCENT ? "bg-amber-600" : "bg-blue-900"}`} style={{ width: `${Math.min(percent, 100)}%` }} />
            </div>
          )}
          {percent !== null && percent >= WARN_AT_PERCENT && (
            <p role="alert" className="text-amber-800" data-testid="spending-alert">
              {percent >= 100 ? "Your monthly spending cap is reached" : `${percent}% of your monthly spending cap is used`}: a job whose hold would pass it is
              refused, and an endpoint is stopped (SpendingLimit).
            </p>
          )}
          <p data-testid="spending-per-job">Per-job cap: {data.per_job_cap === null ? "none" : `${credits(data.per_job_cap)} credits`}</p>
          {(data.admin_monthly_cap !== null || data.admin_per_job_cap !== null) && (
            <p className="text-slate-700" data-testid="spending-admin">
              An admin's caps: monthly {data.admin_monthly_cap === null ? "none" : credits(data.admin_monthly_cap)}, per job{" "}
              {data.admin_per_job_cap === null ? "none" : credits(data.admin_per_job_cap)} (yours cannot go above them).
            </p>
          )}
          <LimitsForm limits={data} />
        </div>
      )}
    </Card>
  );
}
