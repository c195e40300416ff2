import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter } from "react-router";
import { QUERY_DEFAULTS } from "./api/client";
import { App } from "./App";
import "./index.css";

const queries = new QueryClient({
  // polling pauses while the tab is in the background (refetchIntervalInBackground: false)
  defaultOptions: { queries: QUERY_DEFAULTS },
});

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queries}>
      <BrowserRouter>
        <App />
      </BrowserRouter>
    </QueryClientProvider>
  </StrictMode>,
);
