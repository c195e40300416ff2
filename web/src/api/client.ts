// The platform's API, typed from its OpenAPI document (schema.d.ts, generated: `make web-schema`).
// Same origin: the session cookie travels by itself; writes carry the CSRF token.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
export type Job = Schemas["JobResponse"];
export type JobPhase = Schemas["JobPhase"];

export const CSRF_COOKIE = "gw_csrf";
export const CSRF_HEADER = "X-CSRF-Token";
export const SESSION_EXPIRED = "gridweave:session-expired";

export function readCookie(name: string): string | undefined {
  for (const part of document.cookie.split(";")) {
    const [key, ...value] = part.trim().split("=");
    if (key === name) return decodeURIComponent(value.join("="));
  }
  return undefined;
}

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

const session: Middleware = {
  onRequest({ request }) {
    const token = readCookie(CSRF_COOKIE);
    if (!SAFE.has(request.method) && token) request.headers.set(CSRF_HEADER, token);
    return request;
  },
  onResponse({ request, response }) {
    // an ended or expired session: back to sign-in, keeping the page the user was on
    if (response.status === 401 && !new URL(request.url).pathname.startsWith("/v1/sessions")) {
      window.dispatchEvent(new Event(SESSION_EXPIRED));
    }
    return response;
  },
};

export const api = createClient<paths>({
  baseUrl: typeof window === "undefined" ? "" : window.location.origin,
  credentials: "same-origin",
  // looked up per call, so a test's mock of fetch (msw) is the one used
  fetch: (request) => globalThis.fetch(request),
});
api.use(session);

/** The message of a Gridweave error body ({"error": {"code", "message"}}), else a fallback. */
export function errorMessage(error: unknown, fallback = "Something went wrong"): string {
  if (error && typeof error === "object" && "error" in error) {
    const inner = (error as { error?: { message?: unknown } }).error;
    if (inner && typeof inner.message === "string") return inner.message;
  }
  if (error instanceof Error) return error.message;
  return fallback;
}

/** The fields a refused request named (a 422's {"error": {"fields": [{"field", "message"}]}}):
 * each one's message by its API name ("max_gpus"), so a form can say it beside that field. */
export function fieldErrors(error: unknown): Record<string, string> {
  const inner = error && typeof error === "object" && "error" in error ? (error as { error?: { fields?: unknown } }).error : undefined;
  const named: Record<string, string> = {};
  if (!inner || !Array.isArray(inner.fields)) return named;
  for (const item of inner.fields as unknown[]) {
    const { field, message } = (item ?? {}) as { field?: unknown; message?: unknown };
    if (typeof field === "string" && typeof message === "string") named[field] = message;
  }
  return named;
}

/** An error answer of the API: its message, and its HTTP status. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The data of an openapi-fetch answer, or a thrown ApiError with the API's message. */
export function unwrap<T>(answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.error !== undefined || answer.data === undefined) {
    throw new ApiError(errorMessage(answer.error, `HTTP ${answer.response.status}`), answer.response.status);
  }
  return answer.data;
}

/** Whether the API answered a read with a refusal (a 4xx: "no such job" is the answer, not
 * a passing fault, so asking again only keeps the page waiting). */
export function refused(error: unknown): boolean {
  return error instanceof ApiError && error.status >= 400 && error.status < 500;
}

/** The app's query defaults: a failed read is asked once more, unless the API refused it. */
export const QUERY_DEFAULTS = {
  retry: (failures: number, error: unknown) => failures < 1 && !refused(error),
  refetchOnWindowFocus: true,
  staleTime: 2_000,
};

/** Micro-credits as credits with up to 6 decimals. */
export function credits(micro: number): string {
  return (micro / 1_000_000).toLocaleString("en-US", { maximumFractionDigits: 6 });
}

// One format for every date on every page: the browser's own, the one its date inputs (the
// jobs' filters) show too, with two-digit fields.
const DAY: Intl.DateTimeFormatOptions = { year: "numeric", month: "2-digit", day: "2-digit" };
const TIME: Intl.DateTimeFormatOptions = { hour: "2-digit", minute: "2-digit", second: "2-digit" };

/** A moment (an ISO 8601 string) as a date and time in the browser's format; "—" when unknown. */
export function when(value: string | null | undefined): string {
  return value ? new Date(value).toLocaleString(undefined, { ...DAY, ...TIME }) : "—";
}

/** A day ("2026-12-01", local) in the same format as the dates of {@link when}. */
export function day(value: string): string {
  const [year, month, date] = value.split("-").map(Number);
  return new Date(year ?? 1970, (month ?? 1) - 1, date ?? 1).toLocaleDateString(undefined, DAY);
}

/** VRAM and memory sizes are MiB: whole GiB when they are ("8 GiB"), else MiB ("1536 MiB"). */
export function mib(value: number): string {
  return value % 1024 === 0 && value !== 0 ? `${value / 1024} GiB` : `${value} MiB`;
}

/** "1 job", "2 jobs": a count and its noun, plural but for one. */
export function count(value: number, noun: string, plural = `${noun}s`): string {
  return `${value.toLocaleString("en-US")} ${value === 1 ? noun : plural}`;
}
