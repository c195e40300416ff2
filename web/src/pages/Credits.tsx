import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { api, count, credits, day, errorMessage, type Schemas, unwrap, when } from "../api/client";
import { Card } from "../components/Layout";
import { Pager, useCursorPages } from "../components/Pager";
import { Prices } from "./Prices";
import { SpendingLimits } from "./SpendingLimits";

const DAYS = 30;
export const LEDGER_PAGE = 50;
export const USAGE_PAGE = 50;

/** Spend per UTC day (micro-credits), oldest first, one entry for each of the last ``days``. */
export function dailySpend(records: Schemas["UsageRecordResponse"][], now: Date, days = DAYS) {
  const totals = new Map<string, number>();
  for (let back = days - 1; back >= 0; back--) {
    totals.set(new Date(now.getTime() - back * 86_400_000).toISOString().slice(0, 10), 0);
  }
  for (const record of records) {
    const day = record.finished_at.slice(0, 10);
    if (totals.has(day)) totals.set(day, (totals.get(day) ?? 0) + record.cost);
  }
  return [...totals].map(([day, cost]) => ({ day, cost, credits: cost / 1_000_000 }));
}

export function usageCsv(records: Schemas["UsageRecordResponse"][]): string {
  const head = "finished_at,kind,job_id,endpoint_id,node,gpu_count,vram_mb,billed_seconds,price_per_gpu_second,cost_micro_credits,settlement";
  const rows = records.map((r) =>
    [r.finished_at, r.kind, r.job_id ?? "", r.endpoint_id ?? "", r.node, r.gpu_count, r.vram_mb, r.billed_seconds, r.price_per_gpu_second, r.cost, r.settlement.state]
      .map((value) => (/[",\n]/.test(String(value)) ? `"${String(value).replace(/"/g, '""')}"` : String(value)))
      .join(","),
  );
  return [head, ...rows].join("\n") + "\n";
}

/** What a ledger entry is, in words. */
export function entryKind(entry: Schemas["LedgerEntryResponse"]): string {
  const words: Record<string, string> = {
    mint: "credits granted",
    deduct: "deducted",
    settlement: "paid for what ran",
    capture: "paid (settled hold)",
    transfer: entry.amount < 0 ? "sent" : "received",
  };
  const said = words[entry.kind] ?? entry.kind;
  return entry.counterparty_user_id ? `${said} (${entry.amount < 0 ? "to" : "from"} ${entry.counterparty_user_id})` : said;
}

/** The account's ledger: every change of the balance, newest first, a page at a time. */
function Ledger() {
  const pages = useCursorPages<number>(); // its cursors are before_id
  const before = pages.cursor;
  const ledger = useQuery({
    queryKey: ["ledger", before],
    queryFn: async () =>
      unwrap(await api.GET("/v1/credits/ledger", { params: { query: { limit: LEDGER_PAGE, ...(before ? { before_id: before } : {}) } } })),
    refetchInterval: 30_000,
  });
  const entries = ledger.data?.entries ?? [];
  return (
    <Card title="Ledger">
      {ledger.isError && <p role="alert" className="text-sm text-red-700">{errorMessage(ledger.error)}</p>}
      <table className="w-full text-sm">
        <thead>
          <tr className="text-left"><th className="p-1">When</th><th className="p-1">What</th><th className="p-1">Amount</th><th className="p-1">Balance after</th></tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.id} className="border-t border-slate-100" data-testid="ledger-row">
              <td className="p-1">{when(entry.created_at)}</td>
              <td className="p-1">{entryKind(entry)}</td>
              <td className={`p-1 ${entry.amount < 0 ? "text-red-800" : "text-green-800"}`}>{entry.amount > 0 ? "+" : ""}{credits(entry.amount)}</td>
              <td className="p-1">{credits(entry.balance_after)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {ledger.data && entries.length === 0 && <p className="text-sm text-slate-600">{pages.before ? "No older entries." : "No credits yet."}</p>}
      <Pager pages={pages} next={ledger.data?.next_before_id} words={["Newer", "Older"]} className="mt-2 text-sm" />
    </Card>
  );
}

/** The usage records of the last 30 days, newest first, a page at a time (an account that
 * ran thousands of jobs is not one endless page). */
function UsageRecords({ since }: { since: string }) {
  const pages = useCursorPages<number>(); // its cursors are before_id
  const before = pages.cursor;
  const usage = useQuery({
    queryKey: ["usage", "page", since, before],
    queryFn: async () =>
      unwrap(await api.GET("/v1/usage", { params: { query: { from: since, limit: USAGE_PAGE, ...(before ? { before_id: before } : {}) } } })),
    refetchInterval: 30_000,
  });
  const records = usage.data?.records ?? [];
  const shown = pages.before * USAGE_PAGE;
  return (
    <Card title="Usage, last 30 days">
      {usage.isError && <p role="alert" className="text-sm text-red-700">{errorMessage(usage.error)}</p>}
      <table className="w-full text-sm">
        <thead>
          <tr className="text-left"><th className="p-1">Finished</th><th className="p-1">What</th><th className="p-1">Billed s</th><th className="p-1">Cost</th><th className="p-1">Settlement</th></tr>
        </thead>
        <tbody>
          {records.map((record) => (
            <tr key={record.id} className="border-t border-slate-100" data-testid="usage-row">
              <td className="p-1">{when(record.finished_at)}</td>
              <td className="p-1 font-mono">{record.job_id ?? record.endpoint_id ?? record.kind}</td>
              <td className="p-1">{record.billed_seconds}</td>
              <td className="p-1">{credits(record.cost)}</td>
              <td className="p-1">{record.settlement.state}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {usage.data && records.length === 0 && <p className="text-sm text-slate-600">{pages.before ? "No older records." : "No usage in the last 30 days."}</p>}
      <Pager pages={pages} next={usage.data?.next_before_id} words={["Newer records", "Older records"]} className="mt-2 text-sm">
        {usage.data && records.length > 0 && (
          <span className="text-slate-700" data-testid="usage-shown">
            {shown + 1}–{shown + records.length} of {count(usage.data.totals.records, "record")}
          </span>
        )}
      </Pager>
    </Card>
  );
}

export function Credits() {
  const queries = useQueryClient();
  const [message, setMessage] = useState<string | null>(null);
  const balance = useQuery({ queryKey: ["credits"], queryFn: async () => unwrap(await api.GET("/v1/credits")), refetchInterval: 10_000 });
  const [since] = useState(() => new Date(Date.now() - DAYS * 86_400_000).toISOString());
  // the chart and the CSV: the period's records at once (its totals are the server's)
  const usage = useQuery({
    queryKey: ["usage", "month", since],
    queryFn: async () => unwrap(await api.GET("/v1/usage", { params: { query: { from: since, limit: 1000 } } })),
    refetchInterval: 30_000,
  });
  const records = usage.data?.records ?? [];
  const exportCsv = () => {
    const url = URL.createObjectURL(new Blob([usageCsv(records)], { type: "text/csv" }));
    const link = document.createElement("a");
    link.href = url;
    link.download = `gridweave-usage-${new Date().toISOString().slice(0, 10)}.csv`;
    link.click();
    URL.revokeObjectURL(url);
  };
  const refill = async () => {
    const { error } = await api.POST("/v1/credits/refill");
    setMessage(error ? errorMessage(error) : "Refill granted");
    await queries.invalidateQueries({ queryKey: ["credits"] });
  };
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Credits &amp; usage</h1>
      <div className="grid grid-cols-1 gap-4 md:grid-cols-3">
        <Card title="Balance"><p className="text-2xl">{balance.data ? credits(balance.data.balance) : "…"}</p></Card>
        <Card title="Held"><p className="text-2xl">{balance.data ? credits(balance.data.held) : "…"}</p></Card>
        <Card title="Spent, last 30 days"><p className="text-2xl" data-testid="spent">{usage.data ? credits(usage.data.totals.cost) : "…"}</p></Card>
      </div>
      <SpendingLimits />
      <div className="flex gap-3">
        <button type="button" onClick={refill} className="rounded border border-slate-400 px-3 py-1">Ask for a refill</button>
        <button type="button" onClick={exportCsv} disabled={records.length === 0} className="rounded bg-slate-900 px-3 py-1 text-white disabled:opacity-40">Export CSV</button>
        {message && <p role="status" className="text-sm">{message}</p>}
      </div>
      <Card title="Daily spend (credits)">
        <div className="h-64" role="img" aria-label="Daily spend over the last 30 days">
          <ResponsiveContainer width="100%" height="100%">
            <BarChart data={dailySpend(records, new Date())}>
              <CartesianGrid strokeDasharray="3 3" />
              <XAxis dataKey="day" tick={{ fontSize: 10 }} tickFormatter={day} />
              <YAxis tick={{ fontSize: 10 }} />
              <Tooltip labelFormatter={(label) => day(String(label))} />
              <Bar dataKey="credits" fill="#1e3a8a" isAnimationActive={false} />
            </BarChart>
          </ResponsiveContainer>
        </div>
      </Card>
      <Ledger />
      <UsageRecords since={since} />
      <Prices />
    </div>
  );
}
