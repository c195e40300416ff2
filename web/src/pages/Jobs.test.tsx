import { focusManager } from "@tanstack/react-query";
import { act, fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { expect, test, vi } from "vitest";
import { renderApp } from "../test/render";
import { job, ME, server } from "../test/server";

test("pages come from the server, one at a time, with the filters and the cursor", async () => {
  const asked: URLSearchParams[] = [];
  server.use(
    http.get("*/v1/jobs", ({ request }) => {
      const query = new URL(request.url).searchParams;
      asked.push(query);
      return query.get("cursor") === "c2"
        ? HttpResponse.json({ jobs: [job("job-3", "Completed")], total: 3, next_cursor: null })
        : HttpResponse.json({ jobs: [job("job-1"), job("job-2", "Pending")], total: 3, next_cursor: "c2" });
    }),
  );
  renderApp("/jobs");
  expect(await screen.findAllByTestId("job-row")).toHaveLength(2);
  expect(screen.getByTestId("jobs-total")).toHaveTextContent("3 jobs");
  expect(asked[0]?.get("limit")).toBe("50");
  await userEvent.click(screen.getByRole("button", { name: "Next" }));
  await waitFor(() => expect(screen.getByText("job-3")).toBeInTheDocument());
  expect(screen.getByRole("button", { name: "Next" })).toBeDisabled();
  await userEvent.selectOptions(screen.getByLabelText("Phase"), "Failed");
  await waitFor(() => expect(asked.at(-1)?.getAll("phase")).toEqual(["Failed"]));
  expect(asked.at(-1)?.get("cursor")).toBeNull(); // a new filter starts at the first page
  // the dates go as instants, beside the phase
  fireEvent.change(screen.getByLabelText("Created from"), { target: { value: "2026-12-01T08:00" } });
  fireEvent.change(screen.getByLabelText("Created before"), { target: { value: "2026-12-02T08:00" } });
  await waitFor(() => expect(asked.at(-1)?.get("created_before")).toBe(new Date("2026-12-02T08:00").toISOString()));
  expect(asked.at(-1)?.get("created_after")).toBe(new Date("2026-12-01T08:00").toISOString());
  expect(asked.at(-1)?.getAll("phase")).toEqual(["Failed"]);
});

test("bulk cancel sends one cancel per selected job with the CSRF token", async () => {
  document.cookie = "gw_csrf=token-123; path=/";
  const cancelled: [string, string | null][] = [];
  server.use(
    http.get("*/v1/jobs", () => HttpResponse.json({ jobs: [job("job-1"), job("job-2", "Pending"), job("job-9", "Completed")], total: 3, next_cursor: null })),
    http.post("*/v1/jobs/:id/cancel", ({ params, request }) => {
      cancelled.push([String(params.id), request.headers.get("X-CSRF-Token")]);
      return HttpResponse.json(job(String(params.id), "Cancelled"));
    }),
  );
  renderApp("/jobs");
  await screen.findAllByTestId("job-row");
  const rows = screen.getAllByTestId("job-row");
  expect(within(rows[2]!).queryByRole("checkbox")).toBeNull(); // a finished job is not cancellable
  await userEvent.click(screen.getByRole("checkbox", { name: "Select every cancellable job on this page" }));
  await userEvent.click(screen.getByRole("button", { name: "Cancel selected (2)" }));
  expect(await screen.findByRole("status")).toHaveTextContent("2 cancelled");
  expect(cancelled.sort()).toEqual([["job-1", "token-123"], ["job-2", "token-123"]]);
});

test("the first page is asked beside /v1/me, not after it", async () => {
  const events: string[] = [];
  server.use(
    http.get("*/v1/me", async () => {
      events.push("me asked");
      await new Promise((resolve) => setTimeout(resolve, 150));
      events.push("me answered");
      return HttpResponse.json(ME);
    }),
    http.get("*/v1/jobs", () => {
      events.push("jobs asked");
      return HttpResponse.json({ jobs: [job("job-1")], total: 1, next_cursor: null });
    }),
  );
  renderApp("/jobs");
  expect(await screen.findAllByTestId("job-row")).toHaveLength(1);
  expect(events.indexOf("jobs asked")).toBeLessThan(events.indexOf("me answered"));
});

test("the list polls every 5 s while the tab is visible, and not while it is hidden", async () => {
  vi.useFakeTimers({ shouldAdvanceTime: true });
  try {
    let asked = 0;
    server.use(
      http.get("*/v1/jobs", () => {
        asked += 1;
        return HttpResponse.json({ jobs: [job("job-1")], total: 1, next_cursor: null });
      }),
    );
    renderApp("/jobs");
    await screen.findAllByTestId("job-row");
    const first = asked;
    await act(() => vi.advanceTimersByTimeAsync(5_100));
    await waitFor(() => expect(asked).toBe(first + 1));
    act(() => focusManager.setFocused(false)); // the tab goes to the background
    await act(() => vi.advanceTimersByTimeAsync(30_000));
    expect(asked).toBe(first + 1);
    act(() => focusManager.setFocused(true)); // back: read at once, then polled again
    await waitFor(() => expect(asked).toBe(first + 2));
  } finally {
    focusManager.setFocused(undefined);
    vi.useRealTimers();
  }
});

test("one job is 1 job", async () => {
  server.use(http.get("*/v1/jobs", () => HttpResponse.json({ jobs: [job("job-1")], total: 1, next_cursor: null })));
  renderApp("/jobs");
  await screen.findAllByTestId("job-row");
  expect(screen.getByTestId("jobs-total")).toHaveTextContent(/^1 job$/);
  expect(screen.getByTestId("job-row")).toHaveTextContent(/MiB|GiB/);
  expect(screen.getByTestId("job-row")).not.toHaveTextContent(/\bMB\b/);
});
