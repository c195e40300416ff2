// The first page's data is asked by index.html's inline script while the app's script loads
// (window.gwEarly: path -> the fetch's promise), not after it. A query takes its answer once;
// anything but a 2xx (or no early answer) and the query asks the API itself, as ever.

declare global {
  interface Window {
    gwEarly?: Record<string, Promise<Response> | undefined>;
  }
}

/** The JSON of the early answer for `path` (taken once), or undefined. */
export async function takeEarly<T>(path: string): Promise<T | undefined> {
  const early = typeof window === "undefined" ? undefined : window.gwEarly?.[path];
  if (!early) return undefined;
  delete window.gwEarly![path];
  try {
    const response = await early;
    return response.ok ? ((await response.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}
