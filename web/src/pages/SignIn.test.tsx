import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { http, HttpResponse } from "msw";
import { expect, test } from "vitest";
import { renderApp } from "../test/render";
import { ME, server } from "../test/server";

test("an ended session goes to sign-in and back to the same page after it", async () => {
  let signedIn = false;
  const sent: unknown[] = [];
  server.use(
    http.get("*/v1/me", () => (signedIn ? HttpResponse.json(ME) : HttpResponse.json({ error: { code: "unauthorized", message: "no" } }, { status: 401 }))),
    http.post("*/v1/sessions", async ({ request }) => {
      sent.push(await request.json());
      signedIn = true;
      return HttpResponse.json({ user: ME, csrf_token: "t", expires_at: "2026-12-02T00:00:00Z", api_key: null }, { status: 201 });
    }),
    http.get("*/v1/keys", () => HttpResponse.json({ keys: [] })),
  );
  renderApp("/keys?tab=1");
  await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent("/sign-in?next=%2Fkeys%3Ftab%3D1"));
  await userEvent.type(screen.getByLabelText("API key"), "gw_live_abc");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent("/keys?tab=1"));
  expect(sent).toEqual([{ api_key: "gw_live_abc" }]);
  expect(await screen.findByRole("heading", { name: "API keys" })).toBeInTheDocument();
});

test("a session that ends while a page is open goes to sign-in, then back to that page", async () => {
  server.use(
    // /v1/me says signed in (its answer is kept a minute): the 401 is the page's own call's
    http.get("*/v1/me", () => HttpResponse.json(ME)),
    http.get("*/v1/keys", () => HttpResponse.json({ keys: [] })),
    // the session expired: the page's next call is a 401
    http.post("*/v1/keys", () => HttpResponse.json({ error: { code: "unauthorized", message: "no" } }, { status: 401 })),
    http.post("*/v1/sessions", () => {
      return HttpResponse.json({ user: ME, csrf_token: "t", expires_at: "2026-12-02T00:00:00Z", api_key: null }, { status: 201 });
    }),
  );
  renderApp("/keys?tab=2");
  expect(await screen.findByRole("heading", { name: "API keys" })).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Name"), "x");
  await userEvent.click(screen.getByRole("button", { name: "Create key" }));
  await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent("/sign-in?next=%2Fkeys%3Ftab%3D2"));
  await userEvent.type(screen.getByLabelText("API key"), "gw_live_abc");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent(/^\/keys\?tab=2$/));
  expect(await screen.findByRole("heading", { name: "API keys" })).toBeInTheDocument();
});

test("a refused key says why and stays on sign-in", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json({ error: { code: "unauthorized", message: "no" } }, { status: 401 })),
    http.post("*/v1/sessions", () =>
      HttpResponse.json({ error: { code: "unauthorized", message: "this API key is malformed, unknown or revoked" } }, { status: 401 }),
    ),
  );
  renderApp("/sign-in");
  await userEvent.type(screen.getByLabelText("API key"), "gw_live_wrong");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  expect(await screen.findByRole("alert")).toHaveTextContent("malformed, unknown or revoked");
  expect(screen.getByTestId("where")).toHaveTextContent("/sign-in");
});

test("the email code signs a new user in and shows the first key once", async () => {
  const bodies: unknown[] = [];
  server.use(
    http.post("*/v1/sessions/codes", () =>
      HttpResponse.json({ error: { code: "not_found", message: "no user signed up with this email: sign up first", resource: "user" } }, { status: 404 }),
    ),
    http.post("*/v1/signups", () => HttpResponse.json({ email: "new@example.com", expires_at: "2026-12-02T00:00:00Z", delivery: "outbox" }, { status: 202 })),
    http.post("*/v1/sessions", async ({ request }) => {
      bodies.push(await request.json());
      return HttpResponse.json(
        { user: ME, csrf_token: "t", expires_at: "2026-12-02T00:00:00Z", api_key: { key_id: "k", prefix: "gw_live_k", name: "first key", created_at: "2026-12-01T00:00:00Z", revoked_at: null, api_key: "gw_live_first_secret" } },
        { status: 201 },
      );
    }),
  );
  renderApp("/sign-in");
  await userEvent.click(screen.getByRole("tab", { name: "Email code" }));
  await userEvent.type(screen.getByLabelText("Email"), "new@example.com");
  await userEvent.click(screen.getByRole("button", { name: "Email me a code" }));
  expect(await screen.findByTestId("code-sent")).toHaveTextContent("a six-digit sign-up code went to it");
  await userEvent.type(await screen.findByLabelText("Code"), "123456");
  await userEvent.click(screen.getByRole("button", { name: "Sign up" }));
  expect(await screen.findByTestId("first-key")).toHaveTextContent("gw_live_first_secret");
  expect(bodies).toEqual([{ email: "new@example.com", code: "123456" }]);
});

test("a next page on another site is not followed after sign-in", async () => {
  let signedIn = false;
  server.use(
    http.get("*/v1/me", () => (signedIn ? HttpResponse.json(ME) : HttpResponse.json({ error: { code: "unauthorized", message: "no" } }, { status: 401 }))),
    http.post("*/v1/sessions", () => {
      signedIn = true;
      return HttpResponse.json({ user: ME, csrf_token: "t", expires_at: "2026-12-02T00:00:00Z", api_key: null }, { status: 201 });
    }),
  );
  renderApp("/sign-in?next=%2F%2Fevil.example");
  await userEvent.type(screen.getByLabelText("API key"), "gw_live_abc");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent(/^\/$/));
});

test("a registered user asks a sign-in code by email and signs in to a session", async () => {
  let signedIn = false;
  const asked: unknown[] = [];
  const bodies: unknown[] = [];
  server.use(
    http.get("*/v1/me", () => (signedIn ? HttpResponse.json(ME) : HttpResponse.json({ error: { code: "unauthorized", message: "no" } }, { status: 401 }))),
    http.post("*/v1/sessions/codes", async ({ request }) => {
      asked.push(await request.json());
      return HttpResponse.json({ email: "alice@example.com", expires_at: "2026-12-02T00:00:00Z", delivery: "outbox" }, { status: 202 });
    }),
    http.post("*/v1/signups", () => HttpResponse.json({ error: { code: "already_registered", message: "no" } }, { status: 409 })),
    http.post("*/v1/sessions", async ({ request }) => {
      bodies.push(await request.json());
      signedIn = true;
      return HttpResponse.json({ user: ME, csrf_token: "t", expires_at: "2026-12-02T00:00:00Z", api_key: null }, { status: 201 });
    }),
    http.get("*/v1/jobs", () => HttpResponse.json({ jobs: [], total: 0, next_cursor: null })),
  );
  renderApp("/sign-in?next=%2Fjobs");
  await userEvent.click(screen.getByRole("tab", { name: "Email code" }));
  await userEvent.type(screen.getByLabelText("Email"), "alice@example.com");
  await userEvent.click(screen.getByRole("button", { name: "Email me a code" }));
  expect(await screen.findByTestId("code-sent")).toHaveTextContent("A six-digit sign-in code went to alice@example.com.");
  await userEvent.type(screen.getByLabelText("Code"), "654321");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent(/^\/jobs$/));
  expect(asked).toEqual([{ email: "alice@example.com" }]);
  expect(bodies).toEqual([{ email: "alice@example.com", code: "654321" }]);
  expect(screen.queryByTestId("first-key")).toBeNull();
});

test("a refused sign-in code request says why and sends no sign-up code", async () => {
  let signUps = 0;
  server.use(
    http.get("*/v1/me", () => HttpResponse.json({ error: { code: "unauthorized", message: "no" } }, { status: 401 })),
    http.post("*/v1/sessions/codes", () =>
      HttpResponse.json({ error: { code: "rate_limited", message: "too many requests: try again later" } }, { status: 429 }),
    ),
    http.post("*/v1/signups", () => {
      signUps += 1;
      return HttpResponse.json({}, { status: 202 });
    }),
  );
  renderApp("/sign-in");
  await userEvent.click(screen.getByRole("tab", { name: "Email code" }));
  await userEvent.type(screen.getByLabelText("Email"), "alice@example.com");
  await userEvent.click(screen.getByRole("button", { name: "Email me a code" }));
  expect(await screen.findByRole("alert")).toHaveTextContent("too many requests");
  expect(signUps).toBe(0);
  expect(screen.queryByLabelText("Code")).toBeNull();
});

test("a wrong sign-in code says how it was refused and keeps the code form", async () => {
  server.use(
    http.get("*/v1/me", () => HttpResponse.json({ error: { code: "unauthorized", message: "no" } }, { status: 401 })),
    http.post("*/v1/sessions/codes", () => HttpResponse.json({ email: "alice@example.com", expires_at: "2026-12-02T00:00:00Z", delivery: "smtp" }, { status: 202 })),
    http.post("*/v1/sessions", () =>
      HttpResponse.json({ error: { code: "wrong_code", message: "wrong code", attempts_left: 4 } }, { status: 400 }),
    ),
  );
  renderApp("/sign-in");
  await userEvent.click(screen.getByRole("tab", { name: "Email code" }));
  await userEvent.type(screen.getByLabelText("Email"), "alice@example.com");
  await userEvent.click(screen.getByRole("button", { name: "Email me a code" }));
  await userEvent.type(await screen.findByLabelText("Code"), "000000");
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  expect(await screen.findByRole("alert")).toHaveTextContent("wrong code");
  expect(screen.getByLabelText("Code")).toBeInTheDocument();
  expect(screen.getByTestId("where")).toHaveTextContent("/sign-in");
});

test("the sign-in page links to a sign-up: a new user's email gets its code at once", async () => {
  const asked: string[] = [];
  server.use(
    http.post("*/v1/sessions/codes", () => {
      asked.push("sign-in code");
      return HttpResponse.json({ error: { code: "not_found", message: "no" } }, { status: 404 });
    }),
    http.post("*/v1/signups", async ({ request }) => {
      asked.push(`sign-up code for ${((await request.json()) as { email: string }).email}`);
      return HttpResponse.json({ email: "new@example.com", expires_at: "2026-12-02T00:00:00Z", delivery: "outbox" }, { status: 202 });
    }),
  );
  renderApp("/sign-in");
  await userEvent.click(await screen.findByRole("button", { name: "Sign up with your email" }));
  expect(screen.getByRole("heading", { name: "Sign up for Gridweave" })).toBeInTheDocument();
  await userEvent.type(screen.getByLabelText("Email"), "new@example.com");
  await userEvent.click(screen.getByRole("button", { name: "Email me a sign-up code" }));
  expect(await screen.findByTestId("code-sent")).toHaveTextContent("sign-up code went to it");
  expect(screen.getByRole("button", { name: "Sign up" })).toBeInTheDocument();
  expect(asked).toEqual(["sign-up code for new@example.com"]); // no sign-in code asked first
  await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
  expect(screen.getByRole("heading", { name: "Sign in to Gridweave" })).toBeInTheDocument();
});
