import { http, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import type { Schemas } from "../api/client";

export const ME: Schemas["UserResponse"] = {
  user_id: "usr-alice",
  email: "alice@example.com",
  role: "user",
  created_at: "2026-12-01T10:00:00Z",
  verified_at: "2026-12-01T10:00:00Z",
};

export function job(id: string, phase: Schemas["JobPhase"] = "Running"): Schemas["JobResponse"] {
  return {
    job_id: id,
    function_name: "train",
    phase,
    finished: ["Completed", "Failed", "Cancelled", "TimedOut"].includes(phase),
    vram_mb: 4096,
    gpu_count: 1,
    vendor: "nvidia",
    timeout_seconds: 600,
    max_retries: 0,
    node: "gpu-a",
    gpu_indices: [0],
    attempts: 1,
    reason: null,
    message: null,
    created_at: "2026-12-01T10:00:00Z",
    allocated_at: null,
    started_at: null,
    finished_at: null,
    wall_seconds: null,
    billed_seconds: null,
    hold_amount: null,
  };
}

/** A user's spending limits with no cap on either side and nothing spent. */
export function noCaps(userId: string): Schemas["SpendingLimitsResponse"] {
  return {
    user_id: userId,
    monthly_cap: null,
    per_job_cap: null,
    user_monthly_cap: null,
    user_per_job_cap: null,
    admin_monthly_cap: null,
    admin_per_job_cap: null,
    spent: 0,
    month_start: "2026-12-01T00:00:00Z",
  };
}

/** The signed-in user's /v1/me; each test adds the routes it needs. */
/** Metering's default table, abridged: what every page that shows prices reads. */
export const PRICES: Schemas["PriceTable"] = {
  nvidia: [
    { max_vram_mb: 8192, micro_credits_per_gpu_second: 60 },
    { max_vram_mb: null, micro_credits_per_gpu_second: 780 },
  ],
  amd: [{ max_vram_mb: 16384, micro_credits_per_gpu_second: 90 }],
};

export const server = setupServer(
  http.get("*/v1/me", () => HttpResponse.json(ME)),
  http.get("*/v1/prices", () => HttpResponse.json(PRICES)),
);

export function endpoint(name: string, phase: Schemas["EndpointPhase"] = "Running"): Schemas["EndpointResponse"] {
  return {
    name,
    endpoint_id: `${name}-0123456789`,
    path: `/v1/endpoints/${name}`,
    mode: "transformers",
    model: "tiny-gpt2",
    phase,
    reason: null,
    message: null,
    node: "gpu-a",
    gpu_indices: [1],
    ready_replicas: phase === "Running" ? 1 : 0,
    health: phase === "Running" ? "Healthy" : "Unknown",
    vram_mb: 4096,
    gpu_count: 1,
    vendor: "nvidia",
    min_replicas: 0,
    max_replicas: 2,
    idle_seconds: 300,
    created_at: "2026-12-01T10:00:00Z",
    started_at: "2026-12-01T10:01:00Z",
    stopped_at: null,
    billed_seconds: 60,
    price_per_second: 100,
    max_price_per_second: 100,
  };
}

export function mapStatus(id: string, phase = "Running", done = 40, failed = 2): Schemas["MapResponse"] {
  return {
    map_id: id,
    function_name: "square",
    phase,
    finished: ["Completed", "Failed", "Cancelled"].includes(phase),
    items: 100,
    chunks: 10,
    chunk_items: 10,
    done,
    failed,
    workers: [
      { job_id: `${id}-w0`, phase: "Running", node: "gpu-a", gpu_indices: [0, 1], done: 30, failed: 2, attempts: 1, reason: null, message: null },
      { job_id: `${id}-w1`, phase: "Pending", node: null, gpu_indices: [], done: 10, failed: 0, attempts: 2, reason: "NodeLost", message: "gpu-b left" },
    ],
    created_at: "2026-12-01T10:00:00Z",
    hold_amount: 5_400_000,
  };
}
