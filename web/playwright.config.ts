import { defineConfig } from "@playwright/test";

// Driven by tests/web/test_dashboard_browser.py against the real all-in-one (DASHBOARD_URL).
// Debian's Chromium, never a downloaded browser.
export default defineConfig({
  testDir: "e2e",
  timeout: 60_000,
  // a page's answer within 15 s: the default 5 s is thin on a machine busy with the suite
  expect: { timeout: 15_000 },
  workers: 1,
  fullyParallel: false,
  retries: 0,
  outputDir: "test-results/playwright",
  use: {
    baseURL: process.env.DASHBOARD_URL ?? "http://127.0.0.1:3000",
    headless: true,
    viewport: { width: 1280, height: 800 },
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
});
