import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useNavigate, useSearchParams } from "react-router";
import { api, errorMessage } from "../api/client";

const input = "mt-1 block w-full rounded border border-slate-400 px-3 py-2";
const button = "mt-4 rounded bg-slate-900 px-4 py-2 text-white hover:bg-slate-700 disabled:opacity-50";

export function SignIn() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const queries = useQueryClient();
  // "sign-up": a new user's email gets a sign-up code at once (the link under the forms)
  const [mode, setMode] = useState<"key" | "email" | "sign-up">(params.get("sign-up") !== null ? "sign-up" : "key");
  const [apiKey, setApiKey] = useState("");
  const [email, setEmail] = useState("");
  const [code, setCode] = useState("");
  // which code went out: a registered user's sign-in code, or a new user's sign-up code
  const [codeSent, setCodeSent] = useState<"sign-in" | "sign-up" | null>(null);
  const [firstKey, setFirstKey] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // a page of this site only: "/jobs", never "//elsewhere" or "/\elsewhere"
  const wanted = params.get("next") ?? "";
  const next = /^\/(?![/\\])/.test(wanted) ? wanted : "/";

  const signedIn = async () => {
    await queries.invalidateQueries({ queryKey: ["me"] });
    navigate(next, { replace: true });
  };

  const withKey = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const { error: refused } = await api.POST("/v1/sessions", { body: { api_key: apiKey.trim() } });
    setBusy(false);
    if (refused) setError(errorMessage(refused, "Sign-in failed"));
    else await signedIn();
  };

  /** A registered user gets a sign-in code; an email no user signed up with, a sign-up code. */
  const sendCode = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const signIn = await api.POST("/v1/sessions/codes", { body: { email } });
    if (!signIn.error) {
      setBusy(false);
      setCodeSent("sign-in");
      return;
    }
    if (signIn.response.status !== 404) {
      setBusy(false);
      setError(errorMessage(signIn.error, "The code could not be sent"));
      return;
    }
    const { error: refused } = await api.POST("/v1/signups", { body: { email } });
    setBusy(false);
    if (refused) setError(errorMessage(refused, "The code could not be sent"));
    else setCodeSent("sign-up");
  };

  const signUp = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const { error: refused } = await api.POST("/v1/signups", { body: { email } });
    setBusy(false);
    if (refused) setError(errorMessage(refused, "The code could not be sent"));
    else setCodeSent("sign-up");
  };

  const choose = (value: typeof mode) => {
    setMode(value);
    setCodeSent(null);
    setCode("");
    setError(null);
  };

  const withCode = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const { data, error: refused } = await api.POST("/v1/sessions", { body: { email, code: code.trim() } });
    setBusy(false);
    if (refused || !data) setError(errorMessage(refused, "Sign-in failed"));
    else if (data.api_key) setFirstKey(data.api_key.api_key);
    else await signedIn();
  };

  return (
    <main className="mx-auto mt-24 max-w-md rounded-lg border border-slate-200 bg-white p-8 shadow">
      <h1 className="mb-6 text-2xl font-semibold">{mode === "sign-up" ? "Sign up for Gridweave" : "Sign in to Gridweave"}</h1>
      <div role="tablist" aria-label="Sign-in method" className={`mb-6 flex gap-2 ${mode === "sign-up" ? "hidden" : ""}`}>
        {(["key", "email"] as const).map((value) => (
          <button
            key={value}
            type="button"
            role="tab"
            aria-selected={mode === value}
            onClick={() => choose(value)}
            className={`rounded px-3 py-1 text-sm ${mode === value ? "bg-slate-900 text-white" : "bg-slate-100 text-slate-900"}`}
          >
            {value === "key" ? "API key" : "Email code"}
          </button>
        ))}
      </div>
      {firstKey ? (
        <div>
          <p className="font-medium">Welcome. Your first API key, shown this once:</p>
          <code data-testid="first-key" className="mt-2 block break-all rounded bg-slate-100 p-2 text-sm">{firstKey}</code>
          <button type="button" className={button} onClick={signedIn}>Continue</button>
        </div>
      ) : mode === "key" ? (
        <form onSubmit={withKey}>
          <label className="block text-sm font-medium">
            API key
            <input className={input} type="password" autoComplete="off" value={apiKey} onChange={(e) => setApiKey(e.target.value)} placeholder="gw_live_…" required />
          </label>
          <button className={button} disabled={busy} type="submit">Sign in</button>
        </form>
      ) : mode === "sign-up" && !codeSent ? (
        <form onSubmit={signUp}>
          <label className="block text-sm font-medium">
            Email
            <input className={input} type="email" value={email} onChange={(e) => setEmail(e.target.value)} required />
          </label>
          <button className={button} disabled={busy} type="submit">Email me a sign-up code</button>
        </form>
      ) : !codeSent ? (
        <form onSubmit={sendCode}>
          <label className="block text-sm font-medium">
            Email
            <input className={input} type="email" value={email} onChange={(e) => setEmail(e.target.value)} required />
          </label>
          <button className={button} disabled={busy} type="submit">Email me a code</button>
        </form>
      ) : (
        <form onSubmit={withCode}>
          <p className="text-sm" data-testid="code-sent">
            {codeSent === "sign-in"
              ? `A six-digit sign-in code went to ${email}.`
              : `No account uses ${email} yet: a six-digit sign-up code went to it.`}
          </p>
          <label className="mt-3 block text-sm font-medium">
            Code
            <input className={input} inputMode="numeric" value={code} onChange={(e) => setCode(e.target.value)} required />
          </label>
          <button className={button} disabled={busy} type="submit">{codeSent === "sign-up" ? "Sign up" : "Sign in"}</button>
          <button type="button" className="ml-3 mt-4 text-sm text-blue-800 underline" onClick={() => { setCodeSent(null); setCode(""); setError(null); }}>Use another email</button>
        </form>
      )}
      {error && <p role="alert" className="mt-4 text-sm text-red-700">{error}</p>}
      {!firstKey && (
        <p className="mt-6 border-t border-slate-200 pt-4 text-sm">
          {mode === "sign-up" ? "Have an account? " : "New to Gridweave? "}
          <button type="button" className="text-blue-800 underline" onClick={() => choose(mode === "sign-up" ? "key" : "sign-up")}>
            {mode === "sign-up" ? "Sign in" : "Sign up with your email"}
          </button>
        </p>
      )}
    </main>
  );
}
