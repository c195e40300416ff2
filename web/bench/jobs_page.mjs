// The jobs page in headless Chromium (Debian's): first contentful paint, time to interactive
// (seen by the driver, and inside the page), the critical path (Resource Timing) and the
// bytes of each poll. Driven by bench/bench_dashboard.py (DASHBOARD_URL, USER_KEY,
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
    // the same moment seen from inside the page (no driver round trip): the first time a
    // mutation leaves a job row on screen and the Next button enabled
    await page.addInitScript(() => {
      new MutationObserver((_changes, observer) => {
        const next = [...document.querySelectorAll("button")].find((button) => button.textContent === "Next");
        if (document.querySelector("[data-testid=job-row]") && next && !next.disabled) {
          window.gwInteractiveAt = performance.now();
          observer.disconnect();
        }
      }).observe(document, { subtree: true, childList: true, attributes: true });
    });
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
      // the critical path, from Resource Timing: each request's depth is one more than the
      // deepest request that had answered before it started (the page's document is 1); the
      // first page of jobs is on screen after `depth` sequential round trips
      const document_ = performance.getEntriesByType("navigation")[0];
      const requests = [document_, ...performance.getEntriesByType("resource")];
      const depth = new Map([[document_, 1]]);
      for (const entry of requests.slice(1)) {
        const before = requests.filter((other) => depth.has(other) && other.responseEnd <= entry.startTime);
        depth.set(entry, 1 + Math.max(1, ...before.map((other) => depth.get(other))));
      }
      const firstPage = requests.find((entry) => new URL(entry.name).pathname === "/v1/jobs");
      const beforeRows = requests.filter((entry) => firstPage && entry.startTime <= firstPage.responseEnd);
      const statics = beforeRows.filter((entry) => !new URL(entry.name).pathname.startsWith("/v1/"));
      return {
        fcp: paint ? paint.startTime : null,
        interactive: performance.now(),
        interactiveInPage: window.gwInteractiveAt ?? null,
        rows: document.querySelectorAll("[data-testid=job-row]").length,
        total: document.querySelector("[data-testid=jobs-total]")?.textContent,
        depth: firstPage ? depth.get(firstPage) : null,
        requestsBeforeRows: beforeRows.map((entry) => new URL(entry.name).pathname),
        staticWireBytes: statics.reduce((sum, entry) => sum + entry.transferSize, 0),
        staticBytes: statics.reduce((sum, entry) => sum + entry.decodedBodySize, 0),
      };
    });
    await page.waitForTimeout(11_000); // two polls (every 5 s) after the first load
    console.log(JSON.stringify({ run, ...timing, polls: polls.map((p) => p.body + p.headers), pollQueries: polls.map((p) => p.query) }));
    await context.close();
  }
} finally {
  await browser.close();
}
