import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render } from "@testing-library/react";
import { MemoryRouter, useLocation } from "react-router";
import { QUERY_DEFAULTS } from "../api/client";
import { App } from "../App";

export function Where() {
  const location = useLocation();
  return <span data-testid="where">{location.pathname + location.search}</span>;
}

/** The whole app at ``path``, with a fresh query cache and no retries (``asShipped``: the
 * app's own query defaults, retries included). */
export function renderApp(path: string, { asShipped = false }: { asShipped?: boolean } = {}) {
  const queries = new QueryClient({ defaultOptions: { queries: asShipped ? QUERY_DEFAULTS : { retry: false } } });
  return render(
    <QueryClientProvider client={queries}>
      <MemoryRouter initialEntries={[path]}>
        <App />
        <Where />
      </MemoryRouter>
    </QueryClientProvider>,
  );
}
