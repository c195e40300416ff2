import { useQuery } from "@tanstack/react-query";
import { api, credits, errorMessage, mib, unwrap, type Schemas } from "../api/client";
import { Card } from "../components/Layout";

const SECONDS_PER_HOUR = 3600;

/** One row per price tier: its vendor, the VRAM per GPU it covers, per GPU-second and hour. */
export function priceRows(table: Schemas["PriceTable"]) {
  const rows = [];
  for (const vendor of Object.keys(table).sort()) {
    let below = 0;
    for (const tier of table[vendor] ?? []) {
      const price = tier.micro_credits_per_gpu_second;
      const bound = tier.max_vram_mb ?? null;
      rows.push({
        vendor,
        covers: bound === null ? `over ${mib(below)}` : `up to ${mib(bound)}`,
        perSecond: credits(price),
        perHour: credits(price * SECONDS_PER_HOUR),
      });
      below = bound ?? below;
    }
  }
  return rows;
}

/** What a GPU-second costs (metering's table, as the platform answers it). */
export function Prices() {
  const prices = useQuery({ queryKey: ["prices"], queryFn: async () => unwrap(await api.GET("/v1/prices")), staleTime: 60_000 });
  return (
    <Card title="Prices (credits)">
      {prices.isError && <p role="alert" className="text-sm text-red-700">{errorMessage(prices.error)}</p>}
      <p className="mb-2 text-sm text-slate-700">
        Each second a job or an endpoint replica runs is billed per GPU, at the first tier of its vendor that covers its VRAM per GPU.
      </p>
      <table className="w-full text-sm">
        <thead>
          <tr className="text-left"><th className="p-1">Vendor</th><th className="p-1">VRAM per GPU</th><th className="p-1">Per GPU-second</th><th className="p-1">Per GPU-hour</th></tr>
        </thead>
        <tbody>
          {prices.data &&
            priceRows(prices.data).map((row) => (
              <tr key={`${row.vendor} ${row.covers}`} className="border-t border-slate-100" data-testid="price-row">
                <td className="p-1">{row.vendor}</td>
                <td className="p-1">{row.covers}</td>
                <td className="p-1">{row.perSecond}</td>
                <td className="p-1">{row.perHour}</td>
              </tr>
            ))}
        </tbody>
      </table>
    </Card>
  );
}
