import { afterEach, expect, test } from "vitest";
import { takeEarly } from "./early";

afterEach(() => {
  delete window.gwEarly;
});

test("an early 2xx answer is taken once, then the query asks the API itself", async () => {
  window.gwEarly = { "/v1/me": Promise.resolve(Response.json({ user_id: "u-1" })) };
  expect(await takeEarly("/v1/me")).toEqual({ user_id: "u-1" });
  expect(await takeEarly("/v1/me")).toBeUndefined();
});

test("an early error, a failed fetch or no early answer leave the query to the API", async () => {
  window.gwEarly = {
    "/v1/me": Promise.resolve(Response.json({ error: { code: "unauthorized" } }, { status: 401 })),
    "/v1/jobs?limit=50": Promise.reject(new TypeError("network")),
  };
  expect(await takeEarly("/v1/me")).toBeUndefined();
  expect(await takeEarly("/v1/jobs?limit=50")).toBeUndefined();
  expect(await takeEarly("/v1/jobs?limit=10")).toBeUndefined();
  expect(window.gwEarly).toEqual({});
});
