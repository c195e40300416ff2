import AxeBuilder from "@axe-core/playwright";
import { expect, type Page } from "@playwright/test";

export function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (tests/web/test_dashboard_browser.py sets it)`);
  return value;
}

export async function signIn(page: Page, key: string, path = "/"): Promise<void> {
  await page.goto(`/sign-in?next=${encodeURIComponent(path)}`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("signed-in-as")).toBeVisible();
}

/** No serious or critical axe violation on the page as it is, and a screenshot of it. */
export async function reviewPage(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `test-results/screenshots/${name}.png`, fullPage: true });
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.map((node) => node.target.join(" ")).join("; ")})`);
  expect(serious, `axe on ${name}`).toEqual([]);
}
