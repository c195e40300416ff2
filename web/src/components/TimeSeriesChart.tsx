// A time-series line chart in plain SVG (no charting library): one line per series over a
// window, the y axis from 0 to the largest value, a legend with each series' latest value.
import { mib } from "../api/client";

export type Unit = "per_second" | "per_minute" | "seconds" | "bytes" | "ratio" | "count";
export type Series = { labels: Record<string, string>; points: [number, number][] };

const WIDTH = 600;
const HEIGHT = 160;
const PAD = { left: 4, right: 4, top: 8, bottom: 4 };
/** Distinct, colour-blind-safe line colours (Okabe-Ito), reused past eight series. */
const COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"];

function significant(value: number): string {
  return Number(value.toPrecision(3)).toLocaleString("en-US");
}

/** A value as its unit reads: "12.5/s", "3/min", "250 ms", "4 GiB", "25%", "7". */
export function formatValue(value: number, unit: Unit): string {
  switch (unit) {
    case "per_second":
      return `${significant(value)}/s`;
    case "per_minute":
      return `${significant(value)}/min`;
    case "seconds":
      return value < 1 ? `${significant(value * 1000)} ms` : `${significant(value)} s`;
    case "bytes":
      return mib(Math.round(value / 2 ** 20));
    case "ratio":
      return `${significant(value * 100)}%`;
    case "count":
      return Math.round(value).toLocaleString("en-US");
  }
}

/** A series' name in the legend: its labels' values ("platform"; "node-a GPU 0 used"). */
export function seriesName(labels: Record<string, string>): string {
  const { node, gpu, figure, ...rest } = labels;
  const parts = [node, gpu === undefined ? undefined : `GPU ${gpu}`, ...Object.values(rest), figure];
  return parts.filter((part): part is string => Boolean(part)).join(" ") || "all";
}

function clock(seconds: number): string {
  return new Date(seconds * 1000).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
}

export function TimeSeriesChart({ title, unit, series, start, end }: { title: string; unit: Unit; series: Series[]; start: number; end: number }) {
  const values = series.flatMap((one) => one.points.map(([, value]) => value));
  const top = Math.max(0, ...values) || 1;
  const span = end - start || 1;
  const x = (t: number) => PAD.left + ((t - start) / span) * (WIDTH - PAD.left - PAD.right);
  const y = (v: number) => HEIGHT - PAD.bottom - (v / top) * (HEIGHT - PAD.top - PAD.bottom);
  return (
    <figure className="rounded-lg border border-slate-200 bg-white p-3 shadow-sm">
      <figcaption className="text-sm font-medium text-slate-700">{title}</figcaption>
      {values.length === 0 ? (
        <p className="py-8 text-center text-xs text-slate-600">No data in this window.</p>
      ) : (
        <>
          <div className="mt-1 flex justify-between text-xs text-slate-600">
            <span>{formatValue(top, unit)}</span>
          </div>
          <svg role="img" aria-label={`${title}: ${series.length} series`} viewBox={`0 0 ${WIDTH} ${HEIGHT}`} className="h-40 w-full" preserveAspectRatio="none">
            <line x1={PAD.left} x2={WIDTH - PAD.right} y1={y(0)} y2={y(0)} stroke="#cbd5e1" />
            <line x1={PAD.left} x2={WIDTH - PAD.right} y1={y(top)} y2={y(top)} stroke="#e2e8f0" strokeDasharray="4 4" />
            {series.map((one, index) => (
              <polyline
                key={seriesName(one.labels)}
                data-series={seriesName(one.labels)}
                points={one.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ")}
                fill="none"
                stroke={COLOURS[index % COLOURS.length]}
                strokeWidth={1.5}
                vectorEffect="non-scaling-stroke"
              />
            ))}
          </svg>
          <div className="flex justify-between text-xs text-slate-600">
            <span>{clock(start)}</span>
            <span>{clock(end)}</span>
          </div>
          <ul className="mt-1 flex flex-wrap gap-x-4 text-xs">
            {series.map((one, index) => {
              const last = one.points.at(-1);
              return (
                <li key={seriesName(one.labels)} data-testid="legend-entry">
                  <span aria-hidden="true" className="mr-1 inline-block h-2 w-2 rounded-sm" style={{ background: COLOURS[index % COLOURS.length] }} />
                  <span>{seriesName(one.labels)}</span>: <span>{last ? formatValue(last[1], unit) : "—"}</span>
                </li>
              );
            })}
          </ul>
        </>
      )}
    </figure>
  );
}
