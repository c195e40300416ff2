import { readFileSync } from "node:fs";
import { expect, type Page, test } from "@playwright/test";
import { env, reviewPage, signIn } from "./helpers";

test("sign-in page, and the sign-up it links to", async ({ page }) => {
  await page.goto("/sign-in");
  await expect(page.getByRole("heading", { name: "Sign in to Gridweave" })).toBeVisible();
  await reviewPage(page, "01-sign-in");
  await page.getByRole("button", { name: "Sign up with your email" }).click();
  await expect(page.getByRole("heading", { name: "Sign up for Gridweave" })).toBeVisible();
  await expect(page.getByRole("button", { name: "Email me a sign-up code" })).toBeVisible();
  await reviewPage(page, "01-sign-up");
});

/** The moment ``at`` (ISO 8601) as a datetime-local input's value: local, to the minute. */
function localMinute(at: string): string {
  const moment = new Date(at);
  const two = (value: number) => String(value).padStart(2, "0");
  return `${moment.getFullYear()}-${two(moment.getMonth() + 1)}-${two(moment.getDate())}T${two(moment.getHours())}:${two(moment.getMinutes())}`;
}

/** Types the job's creation time into the "Created from" filter as the jobs table shows it:
 * its fields in the table's order (then AM/PM where it shows one), the way a person copies a
 * date from the table. The filter reads the same minute only if both write dates alike (the
 * table's dd/mm/yyyy against the filter's mm/dd/yyyy read another day, or none). */
async function typeAsShown(page: Page, jobId: string, createdAt: string): Promise<void> {
  const shown = (await page.getByTestId("job-row").filter({ hasText: jobId }).getByRole("cell").nth(5).textContent()) ?? "";
  const [datePart = "", timePart = ""] = shown.split(", ");
  const [hour = "", minute = ""] = timePart.match(/\d+/g) ?? [];
  const filter = page.getByLabel("Created from");
  await filter.focus();
  for (const field of datePart.match(/\d+/g) ?? []) {
    await page.keyboard.type(field);
    if (field.length > 2) await page.keyboard.press("ArrowRight"); // a year's field waits for more digits
  }
  await page.keyboard.type(hour + minute);
  const half = /\b([AP])M\b/i.exec(timePart)?.[1];
  if (half) await page.keyboard.type(half);
  await expect(filter, `typed as the table shows it: "${shown}"`).toHaveValue(localMinute(createdAt));
  await expect(page.getByTestId("job-row").filter({ hasText: jobId })).toHaveCount(1); // created in that minute: listed
  await filter.fill("");
}

test("a job submitted through the SDK appears, and every user page passes axe", async ({ page }) => {
  test.slow(); // six pages, each through axe: past a minute on a busy machine
  const jobId = env("JOB_ID");
  await signIn(page, env("USER_KEY"));
  await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
  await expect(page.getByRole("link", { name: jobId })).toBeVisible(); // running now
  await reviewPage(page, "02-overview");

  await page.getByRole("link", { name: "Jobs" }).click();
  await expect(page.getByRole("link", { name: jobId })).toBeVisible();
  await expect(page.getByRole("link", { name: env("FINISHED_JOB_ID") })).toBeVisible();
  // "2 jobs", "1 job": the count as words; VRAM in MiB/GiB, never MB
  const total = ((await (await page.request.get("/v1/jobs?limit=1")).json()) as { total: number }).total;
  await expect(page.getByTestId("jobs-total")).toHaveText(total === 1 ? "1 job" : `${total} jobs`);
  await expect(page.getByTestId("job-row").first()).toContainText(/\d (MiB|GiB) /);
  // one date format: the table's dates are the browser's, the one its date filters show
  const created = ((await (await page.request.get(`/v1/jobs/${jobId}`)).json()) as { created_at: string }).created_at;
  const shown = await page.evaluate(
    (at) => new Date(at).toLocaleDateString(undefined, { year: "numeric", month: "2-digit", day: "2-digit" }),
    created,
  );
  await expect(page.getByTestId("job-row").filter({ hasText: jobId })).toContainText(shown);
  await typeAsShown(page, jobId, created);
  // one job matches a filter: "1 job", never "1 jobs"
  const running = ((await (await page.request.get("/v1/jobs?limit=1&phase=Running")).json()) as { total: number }).total;
  expect(running, "the ticker still runs").toBe(1);
  await page.getByLabel("Phase").selectOption("Running");
  await expect(page.getByTestId("job-row")).toHaveCount(1);
  await expect(page.getByTestId("jobs-total")).toHaveText("1 job");
  await page.getByLabel("Phase").selectOption("Any");
  await reviewPage(page, "03-jobs");

  await page.getByRole("link", { name: "Credits & usage" }).click();
  await expect(page.getByTestId("usage-row").first()).toBeVisible({ timeout: 30_000 });
  expect(await page.getByTestId("usage-row").count()).toBeLessThanOrEqual(50); // a page at a time
  await expect(page.getByTestId("usage-shown")).toContainText(/of \d+ records?/);
  await expect(page.getByTestId("ledger-row").filter({ hasText: "credits granted" }).first()).toBeVisible(); // the sign-up's credits
  await reviewPage(page, "05-credits");

  await page.getByRole("link", { name: "API keys" }).click();
  await expect(page.getByTestId("key-row").first()).toBeVisible();
  await reviewPage(page, "06-keys");

  await page.getByRole("link", { name: "Endpoints" }).click();
  await expect(page.getByRole("heading", { name: "Endpoints" })).toBeVisible();
  await reviewPage(page, "07-endpoints");
});

test("a line the job prints arrives in the page within 3 s", async ({ page }) => {
  const jobId = env("JOB_ID");
  await signIn(page, env("USER_KEY"), `/jobs/${jobId}`);
  const lines = page.getByTestId("log-line");
  await expect(lines.first()).toBeVisible({ timeout: 15_000 });
  // the job stamps each line with the time it printed it; this machine's clock is the job's
  const count = await lines.count();
  await expect(lines).toHaveCount(count + 1, { timeout: 5_000 }).catch(() => undefined);
  const latest = (await lines.last().textContent()) ?? "";
  const arrivedAt = Date.now() / 1000;
  const printedAt = Number(/at (\d+\.\d+)/.exec(latest)?.[1]);
  expect(printedAt, latest).toBeGreaterThan(0);
  expect(arrivedAt - printedAt, `"${latest}" arrived after`).toBeLessThan(3);
  await expect(page.getByTestId("job-node")).not.toHaveText("—");
  // the timeline is the job's conditions: allocated, then running, each with its time
  const timeline = page.getByRole("list", { name: "Phase timeline" });
  await expect(timeline.getByTestId("timeline-step").filter({ hasText: /^Allocated/ })).toHaveCount(1);
  await expect(timeline.getByTestId("timeline-step").filter({ hasText: /^Running/ })).toHaveCount(1);
  await expect(timeline.getByTestId("timeline-step").last()).toHaveText("Now: Running");
  await expect(timeline.getByTestId("timeline-step").filter({ hasText: /\((True|False|Unknown)\)/ })).toHaveCount(0);
  await reviewPage(page, "04-job-detail");
  // a finished job's Running condition went back to False: "No longer running", never "(False)"
  await page.goto(`/jobs/${env("FINISHED_JOB_ID")}`);
  const ended = page.getByRole("list", { name: "Phase timeline" }).getByTestId("timeline-step");
  await expect(ended.filter({ hasText: /^No longer running/ })).toHaveCount(1);
  await expect(ended.filter({ hasText: /\((True|False|Unknown)\)/ })).toHaveCount(0);
  await expect(ended.filter({ hasText: /ended/ })).toHaveCount(0);
});

test("endpoint detail: replicas, health, the calls the API counted and a printed line", async ({ page }) => {
  const name = env("ENDPOINT_NAME");
  await signIn(page, env("USER_KEY"), "/endpoints");
  await page.getByRole("main").getByRole("link", { name, exact: true }).click();
  await expect(page.getByRole("heading", { name, exact: true })).toBeVisible();
  await expect(page.getByTestId("endpoint-replicas")).toHaveText(/^[1-9]\d* ready$/);
  const stats = (await (await page.request.get(`/v1/endpoints/${name}/-/stats`)).json()) as {
    requests: number;
    latency_p50_ms: number | null;
  };
  expect(stats.requests).toBeGreaterThanOrEqual(3); // the SDK called it three times
  await expect(page.getByTestId("stat-requests")).toHaveText(String(stats.requests));
  expect(stats.latency_p50_ms).not.toBeNull();
  await expect(page.getByTestId("stat-p50")).toHaveText(/\d ms|\d s/);
  await expect(page.getByTestId("stat-p99")).toHaveText(/\d ms|\d s/);
  // the SDK's last call printed "greeting cy" in the replica: its stdout on the page
  await expect(page.getByTestId("replica-stdout").first()).toContainText("greeting cy", { timeout: 15_000 });
  await expect(page.getByTestId("replica-log").first()).toContainText("running");
  await reviewPage(page, "15-endpoint-detail");
});

test("a registered user signs in with a code emailed on request", async ({ page }) => {
  await page.goto("/sign-in?next=%2Fjobs");
  await page.getByRole("tab", { name: "Email code" }).click();
  await page.getByLabel("Email").fill(env("USER_EMAIL"));
  await page.getByRole("button", { name: "Email me a code" }).click();
  await expect(page.getByTestId("code-sent")).toContainText("sign-in code went to");
  await reviewPage(page, "16-sign-in-email-code");
  // the all-in-one prints the mail on its console; the Python side writes the code here
  let code = "";
  await expect
    .poll(() => {
      try {
        code = readFileSync(env("SIGN_IN_CODE_FILE"), "utf8").trim();
      } catch {
        code = "";
      }
      return code;
    }, { timeout: 30_000 })
    .toMatch(/^\d{6}$/);
  await page.getByLabel("Code").fill(code);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("signed-in-as")).toHaveText(env("USER_EMAIL"));
  await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
  await expect(page.getByTestId("first-key")).toHaveCount(0); // no new key: the user has theirs
});

test("a second user cannot see the first user's job", async ({ page }) => {
  const jobId = env("JOB_ID");
  await signIn(page, env("OTHER_KEY"), "/jobs");
  await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
  await expect(page.getByText("No jobs match.")).toBeVisible();
  await expect(page.getByRole("link", { name: jobId })).toHaveCount(0);
  await page.goto(`/jobs/${jobId}`);
  // the 404 is the answer: shown at once, never asked again behind "Loading…"
  await expect(page.getByRole("alert")).toContainText("no such job", { timeout: 3_000 });
  await page.goto(`/endpoints/${env("ENDPOINT_NAME")}`);
  await expect(page.getByRole("alert")).toContainText("no such endpoint");
  await reviewPage(page, "17-endpoint-not-found");
});

/** VRAM as the dashboard writes it: whole GiB when it is, else MiB. */
function mibText(value: number): string {
  return value % 1024 === 0 && value !== 0 ? `${value / 1024} GiB` : `${value} MiB`;
}

type InventoryGpu = {
  index: number;
  held_mb: number;
  free_mb: number;
  vram_mb: number;
  used_mb: number | null;
  allocations: { kind: string; name: string; display_name: string | null; user_id: string | null; vram_mb: number }[];
};

/** Each GPU's used / held / free / total as the API says them and as the page's bars show them. */
async function barsAndApi(page: Page): Promise<{ api: string[]; bars: string[] }> {
  const inventory = (await (await page.request.get("/v1/nodes")).json()) as { nodes: { gpus: InventoryGpu[] }[] };
  const api = inventory.nodes
    .flatMap((node) => node.gpus)
    .map((gpu) => [gpu.used_mb ?? "not measured", Math.min(gpu.held_mb, gpu.vram_mb), gpu.free_mb, gpu.vram_mb].join("/"));
  const bars = await page
    .getByRole("meter")
    .evaluateAll((meters) =>
      meters.map((m) => ["data-used-mb", "aria-valuenow", "data-free-mb", "aria-valuemax"].map((name) => m.getAttribute(name)).join("/")),
    );
  return { api, bars };
}

test("admin pages: each VRAM bar equals the API's figure", async ({ page }) => {
  await signIn(page, env("ADMIN_KEY"), "/admin/nodes");
  await expect(page.getByRole("heading", { name: "Nodes" })).toBeVisible();
  await expect(page.getByRole("meter").first()).toBeVisible();
  // the API and the page read the same figures (asked again while a poll brings new ones)
  await expect.poll(async () => {
    const { api, bars } = await barsAndApi(page);
    return api.length > 0 && JSON.stringify(bars) === JSON.stringify(api) ? "equal" : `${bars} != ${api}`;
  }, { timeout: 15_000 }).toBe("equal");

  // the job the SDK submitted is under the GPU the API places it on, with its user
  const inventory = (await (await page.request.get("/v1/nodes")).json()) as { nodes: { gpus: InventoryGpu[] }[] };
  const gpus = inventory.nodes.flatMap((node) => node.gpus);
  const position = gpus.findIndex((gpu) => gpu.allocations.some((a) => a.kind === "job" && a.name === env("JOB_ID")));
  expect(position, "the running job holds a GPU").toBeGreaterThanOrEqual(0);
  const held = gpus[position]!.allocations.find((a) => a.name === env("JOB_ID"))!;
  expect(held.user_id).toBe(env("USER_ID"));
  const holder = page.getByTestId("gpu").nth(position).getByTestId("holder").filter({ hasText: env("JOB_ID") });
  await expect(holder).toContainText(`user ${env("USER_ID")}`);
  await expect(holder.getByTestId("holder-vram")).toHaveText(mibText(held.vram_mb));
  await expect(page.getByText(/\d MB\b/)).toHaveCount(0); // VRAM is MiB: never shown as MB
  await expect(holder.getByRole("link")).toHaveCount(0); // another user's job: its page is theirs
  await expect(page.getByTestId("holder").filter({ hasText: env("ENDPOINT_NAME") }).first()).toContainText("endpoint");
  await reviewPage(page, "08-admin-nodes");

  await expect(page.getByText(/Not in the node registry|heartbeat/).first()).toBeVisible();

  // the user pushed past the quota (tests/web/test_dashboard_browser.py): the page says so
  await page.getByRole("link", { name: "Registry" }).click();
  // every user's usage, most used first: the user over quota on top, with its bar
  const top = page.getByTestId("quota-row").first();
  await expect(top).toContainText(env("USER_EMAIL"));
  await expect(top).toContainText("of 300.00 KB");
  expect(Number(await top.getByRole("meter").getAttribute("aria-valuenow"))).toBeGreaterThan(300_000);
  await page.getByLabel("User id").fill(env("USER_ID"));
  await page.getByRole("button", { name: "Show" }).click();
  const meter = page.getByRole("meter", { name: "Registry usage" });
  await expect(meter).toBeVisible();
  const usage = Number(await meter.getAttribute("aria-valuenow"));
  expect(usage).toBeGreaterThan(Number(await meter.getAttribute("aria-valuemax")));
  await expect(page.getByTestId("over-quota")).toContainText("Over quota");
  await expect(page.getByTestId("over-quota")).toContainText("pushes are refused");
  await reviewPage(page, "09-admin-registry");

  await page.getByRole("link", { name: "Diagnostics" }).click();
  await expect(page.getByText("healthy").first()).toBeVisible({ timeout: 15_000 });
  // figures are amounts: the services' counters carry _created timestamps and their histograms
  // _bucket samples (added up as figures once: "5,389,236,337.383"); none is shown as a figure
  const raw = (await (await page.request.get("/-/diagnostics")).json()) as { services: { metrics: string }[] };
  expect(raw.services.some((service) => /^gridweave_\w+_created[{ ]/m.test(service.metrics))).toBe(true);
  expect(raw.services.some((service) => /^gridweave_\w+_bucket\{/m.test(service.metrics))).toBe(true);
  await expect(page.getByText("gridweave_http_requests_total", { exact: true }).first()).toBeVisible();
  await expect(page.getByText(/^\s*\w+_(created|bucket)\s*$/)).toHaveCount(0);
  await reviewPage(page, "10-admin-diagnostics");

  await page.getByRole("link", { name: "Users" }).click();
  await expect(page.getByRole("heading", { name: "Users" })).toBeVisible();
  await expect(page.getByTestId("user-row").first()).toBeVisible();
  await reviewPage(page, "11-admin-users");
});

test("admin: a join key is made, its command shown once and copied, then revoked", async ({ page, context }) => {
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  await signIn(page, env("ADMIN_KEY"), "/admin/join-keys");
  await expect(page.getByRole("heading", { name: "Join keys" })).toBeVisible();
  await page.getByLabel("Description").fill("rack 4");
  await page.getByLabel("Uses").fill("2");
  await page.getByRole("button", { name: "Create join key" }).click();
  const dialog = page.getByRole("dialog");
  await expect(dialog.getByTestId("join-command")).toContainText("join-node.sh --master");
  const command = (await dialog.getByTestId("join-command").textContent()) ?? "";
  await reviewPage(page, "12-admin-join-key-created");
  await dialog.getByRole("button", { name: "Copy the join command" }).click();
  await expect(dialog.getByRole("button", { name: "Copy the join command" })).toHaveText("Copied");
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(command);
  await dialog.getByRole("button", { name: "Done" }).click();
  const row = page.getByTestId("join-key-row").filter({ hasText: "rack 4" }).first();
  await expect(row).toContainText("0 of 2");
  await expect(row).toContainText("usable");
  await reviewPage(page, "13-admin-join-keys");
  page.once("dialog", (confirm) => void confirm.accept());
  await row.getByRole("button", { name: /^Revoke/ }).click();
  await expect(row).toContainText("revoked");
});

test("admin: a double-clicked credit grant is one grant", async ({ page }) => {
  await signIn(page, env("ADMIN_KEY"), "/admin/users");
  const userId = env("USER_ID");
  const before = (await (await page.request.get("/v1/credits", { headers: { Authorization: `Bearer ${env("USER_KEY")}` } })).json()) as { balance: number };
  const row = page.getByTestId("user-row").filter({ hasText: userId });
  await row.getByRole("spinbutton").fill("1.5");
  await row.getByRole("button", { name: "Grant" }).dblclick();
  await expect(page.getByRole("status")).toContainText("Granted 1.5 credits");
  const after = (await (await page.request.get("/v1/credits", { headers: { Authorization: `Bearer ${env("USER_KEY")}` } })).json()) as { balance: number };
  expect(after.balance - before.balance).toBe(1_500_000);
  await reviewPage(page, "14-admin-users-granted");
});

test("admin: a user's quotas and share weight, set on the users page; a refused value names its field", async ({ page }) => {
  const [userId, email] = [env("USER_ID"), env("USER_EMAIL")];
  await signIn(page, env("ADMIN_KEY"), "/admin/users");
  const row = page.getByTestId("user-row").filter({ hasText: userId });
  await expect(row.getByTestId("user-limits")).toHaveText("no quota; weight 1 (default)");
  await row.getByRole("button", { name: `Edit the limits of ${email}` }).click();
  const dialog = page.getByRole("dialog", { name: `Limits of ${email}` });
  await dialog.getByLabel("GPU quota").fill("-1");
  await dialog.getByLabel("Share weight").fill("0");
  await dialog.getByRole("button", { name: "Save limits" }).click();
  // the platform's 422 names both fields: each is said beside its input
  const alert = dialog.getByRole("alert");
  await expect(alert).toContainText("GPU quota (max_gpus): Input should be greater than or equal to 0");
  await expect(alert).toContainText("Share weight (share_weight): Input should be greater than 0");
  await expect(dialog.getByLabel("GPU quota")).toHaveAttribute("aria-invalid", "true");
  await expect(dialog.getByLabel("VRAM quota (MiB)")).toHaveAttribute("aria-invalid", "false");
  await reviewPage(page, "18-admin-user-limits-refused");
  await dialog.getByLabel("GPU quota").fill("4");
  await dialog.getByLabel("VRAM quota (MiB)").fill("16384");
  await dialog.getByLabel("Share weight").fill("2");
  await dialog.getByRole("button", { name: "Save limits" }).click();
  await expect(page.getByRole("status")).toHaveText(`Limits of ${email} saved: 4 GPUs, 16 GiB VRAM; weight 2`);
  await expect(row.getByTestId("user-limits")).toHaveText("4 GPUs, 16 GiB VRAM; weight 2");
  const stored = await (await page.request.get(`/v1/admin/users/${userId}/limits`)).json();
  expect(stored).toEqual({ user_id: userId, max_gpus: 4, max_vram_mb: 16384, share_weight: 2, share_weight_is_default: false });
  // cleared again: blank is no quota and the default weight
  await row.getByRole("button", { name: `Edit the limits of ${email}` }).click();
  for (const label of ["GPU quota", "VRAM quota (MiB)", "Share weight"]) await dialog.getByLabel(label).fill("");
  await dialog.getByRole("button", { name: "Save limits" }).click();
  await expect(row.getByTestId("user-limits")).toHaveText("no quota; weight 1 (default)");
  expect((await (await page.request.get(`/v1/admin/users/${userId}/limits`)).json()).share_weight_is_default).toBe(true);
});

test("admin: a user's spending caps, set on the users page, are the admin's side of the user's caps", async ({ page }) => {
  const [userId, email] = [env("USER_ID"), env("USER_EMAIL")];
  await signIn(page, env("ADMIN_KEY"), "/admin/users");
  const row = page.getByTestId("user-row").filter({ hasText: userId });
  await expect(row.getByTestId("user-spending-caps")).toContainText("admin: monthly none, per job none");
  await row.getByRole("button", { name: `Edit the spending caps of ${email}` }).click();
  const dialog = page.getByRole("dialog", { name: `Spending caps of ${email}` });
  await dialog.getByLabel("Monthly cap (credits)").fill("ten");
  await dialog.getByRole("button", { name: "Save caps" }).click();
  await expect(dialog.getByTestId("field-error")).toHaveText("Monthly cap (credits): not a number of credits (blank: no cap)");
  await dialog.getByLabel("Monthly cap (credits)").fill("40000");
  await dialog.getByLabel("Per-job cap (credits)").fill("2500.5");
  await dialog.getByRole("button", { name: "Save caps" }).click();
  await expect(page.getByRole("status")).toContainText(`Spending caps of ${email} saved: admin: monthly 40,000, per job 2,500.5`);
  const stored = await (await page.request.get(`/v1/admin/users/${userId}/spending-limits`)).json();
  expect([stored.admin_monthly_cap, stored.admin_per_job_cap]).toEqual([40_000_000_000, 2_500_500_000]);
  // cleared again: blank is no cap
  await row.getByRole("button", { name: `Edit the spending caps of ${email}` }).click();
  for (const label of ["Monthly cap (credits)", "Per-job cap (credits)"]) await dialog.getByLabel(label).fill("");
  await dialog.getByRole("button", { name: "Save caps" }).click();
  await expect(row.getByTestId("user-spending-caps")).toContainText("admin: monthly none, per job none");
});

test("signing out ends the session", async ({ page }) => {
  await signIn(page, env("USER_KEY"), "/keys");
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/sign-in/);
  expect((await page.request.get("/v1/me")).status()).toBe(401);
});
