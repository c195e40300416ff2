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

/** The data of an openapi-fetch answer, or a thrown Error with the API's message. */
export function unwrap<T>(answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.error !== undefined || answer.data === undefined) {
    throw new Error(errorMessage(answer.error, `HTTP ${answer.response.status}`));
  }
  return answer.data;
}

/** Micro-credits as credits with up to 6 decimals. */
export function credits(micro: number): string {
  return (micro / 1_000_000).toLocaleString("en-US", { maximumFractionDigits: 6 });
}

export function when(value: string | null | undefined): string {
  return value ? new Date(value).toLocaleString("en-GB", { hour12: false }) : "—";
}
