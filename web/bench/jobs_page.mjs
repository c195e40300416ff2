// The jobs page in headless Chromium (Debian's): first contentful paint, time to interactive
// and the bytes of each poll. Driven by bench/bench_dashboard.py (DASHBOARD_URL, USER_KEY,
// RUNS); prints one JSON line per run.
import { chromium } from "playwright-core";

const base = process.env.DASHBOARD_URL;
const runs = Number(process.env.RUNS ?? "5");
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  for (let run = 0; run < runs; run++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const signed = await context.request.post(`${base}/v1/sessions`, { data: { api_key: process.env.USER_KEY } });
    if (signed.status() !== 201) throw new Error(`sign-in: ${signed.status()}`);
    const page = await context.newPage();
    const polls = [];
    page.on("requestfinished", async (request) => {
      const url = new URL(request.url());
      if (url.pathname !== "/v1/jobs") return;
      const sizes = await request.sizes();
      polls.push({ at: Date.now(), body: sizes.responseBodySize, headers: sizes.responseHeadersSize, query: url.search });
    });
    await page.goto(`${base}/jobs`, { waitUntil: "commit" });
    // interactive: the first page of jobs is on screen and the Next button works
    await page.getByTestId("job-row").first().waitFor({ timeout: 30_000 });
    await page.getByRole("button", { name: "Next" }).and(page.locator(":enabled")).waitFor({ timeout: 30_000 });
    const timing = await page.evaluate(() => {
      const paint = performance.getEntriesByName("first-contentful-paint")[0];
      return { fcp: paint ? paint.startTime : null, interactive: performance.now(), rows: document.querySelectorAll("[data-testid=job-row]").length, total: document.querySelector("[data-testid=jobs-total]")?.textContent };
    });
    await page.waitForTimeout(11_000); // two polls (every 5 s) after the first load
    console.log(JSON.stringify({ run, ...timing, polls: polls.map((p) => p.body + p.headers), pollQueries: polls.map((p) => p.query) }));
    await context.close();
  }
} finally {
  await browser.close();
}
