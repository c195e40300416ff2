import * as Dialog from "@radix-ui/react-dialog";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, credits, errorMessage, fieldErrors, type Schemas, unwrap } from "../../api/client";
import { capText, microCredits } from "../SpendingLimits";

type Limits = Schemas["SpendingLimitsResponse"];
type Field = "monthly_cap" | "per_job_cap";

/** The admin's two caps by their API names; the user's own caps cannot go above them. */
const FIELDS: readonly { name: Field; label: string }[] = [
  { name: "monthly_cap", label: "Monthly cap (credits)" },
  { name: "per_job_cap", label: "Per-job cap (credits)" },
];

export function spendingQueryKey(userId: string) {
  return ["admin-user-spending-limits", userId] as const;
}

function cap(micro: number | null): string {
  return micro === null ? "none" : credits(micro);
}

/** A user's caps in words: "admin: monthly 50, per job none; in force: ...; spent 12.5". */
export function capsSummary(limits: Limits): string {
  return (
    `admin: monthly ${cap(limits.admin_monthly_cap)}, per job ${cap(limits.admin_per_job_cap)}; ` +
    `in force: monthly ${cap(limits.monthly_cap)}, per job ${cap(limits.per_job_cap)}; ` +
    `spent ${credits(limits.spent)} this month`
  );
}

function CapsForm({ userId, limits, onSaved }: { userId: string; limits: Limits; onSaved: (saved: Limits) => void }) {
  const [text, setText] = useState<Record<Field, string>>({
    monthly_cap: capText(limits.admin_monthly_cap),
    per_job_cap: capText(limits.admin_per_job_cap),
  });
  const [refused, setRefused] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const save = async (event: React.FormEvent) => {
    event.preventDefault();
    if (pending) return;
    const parsed = { monthly_cap: microCredits(text.monthly_cap), per_job_cap: microCredits(text.per_job_cap) };
    const unreadable = Object.fromEntries(Object.entries(parsed).filter(([, value]) => typeof value === "string")) as Record<string, string>;
    setRefused(unreadable);
    if (Object.keys(unreadable).length) return setError("Not saved.");
    setPending(true);
    const { data, error: answer } = await api.PUT("/v1/admin/users/{user_id}/spending-limits", {
      params: { path: { user_id: userId } },
      body: parsed as { monthly_cap: number | null; per_job_cap: number | null },
    });
    setPending(false);
    if (answer || !data) {
      setRefused(fieldErrors(answer));
      return setError(`Not saved. ${errorMessage(answer)}`);
    }
    onSaved(data);
  };
  return (
    <form onSubmit={save} noValidate className="mt-4 space-y-3 text-sm">
      {FIELDS.map(({ name, label }) => (
        <div key={name}>
          <label className="block" htmlFor={`admin-cap-${name}`}>{label}</label>
          <input
            id={`admin-cap-${name}`}
            className="w-40 rounded border border-slate-400 px-2 py-1 aria-[invalid=true]:border-red-700"
            inputMode="decimal"
            placeholder="no cap"
            value={text[name]}
            aria-invalid={name in refused}
            aria-describedby={name in refused ? `admin-cap-${name}-error` : undefined}
            onChange={(e) => setText({ ...text, [name]: e.target.value })}
          />
          {name in refused && (
            <p id={`admin-cap-${name}-error`} className="text-red-700" data-testid="field-error">{label}: {refused[name]}</p>
          )}
        </div>
      ))}
      {error && <p role="alert" className="text-red-700">{error}</p>}
      <div className="flex gap-2">
        <button type="submit" disabled={pending} className="rounded bg-slate-900 px-3 py-1 text-white disabled:opacity-60">Save caps</button>
        <Dialog.Close type="button" className="rounded border border-slate-400 px-3 py-1">Cancel</Dialog.Close>
      </div>
    </form>
  );
}

/** A user's spending caps (an admin's and those in force) and this month's spending, and an
 * Edit that sets the admin's caps in a dialog (admins). */
export function UserSpendingCaps({ user, onSaved }: { user: Schemas["UserResponse"]; onSaved: (message: string) => void }) {
  const queries = useQueryClient();
  const [open, setOpen] = useState(false);
  const who = user.email ?? user.user_id;
  const limits = useQuery({
    queryKey: spendingQueryKey(user.user_id),
    queryFn: async () =>
      unwrap(await api.GET("/v1/admin/users/{user_id}/spending-limits", { params: { path: { user_id: user.user_id } } })),
  });
  const saved = (data: Limits) => {
    queries.setQueryData(spendingQueryKey(user.user_id), data);
    setOpen(false);
    onSaved(`Spending caps of ${who} saved: ${capsSummary(data)}`);
  };
  return (
    <div className="flex items-center gap-2">
      <span data-testid="user-spending-caps" className={limits.isError ? "text-red-700" : ""}>
        {limits.data ? capsSummary(limits.data) : limits.isError ? errorMessage(limits.error) : "…"}
      </span>
      <Dialog.Root open={open} onOpenChange={setOpen}>
        <Dialog.Trigger disabled={!limits.data} className="text-blue-800 underline disabled:opacity-40" aria-label={`Edit the spending caps of ${who}`}>
          Edit
        </Dialog.Trigger>
        <Dialog.Portal>
          <Dialog.Overlay className="fixed inset-0 bg-black/40" />
          <Dialog.Content className="fixed left-1/2 top-1/4 w-[32rem] -translate-x-1/2 rounded-lg bg-white p-6 shadow-xl">
            <Dialog.Title className="text-lg font-semibold">Spending caps of {who}</Dialog.Title>
            <Dialog.Description className="mt-1 text-sm text-slate-700">
              The lower of these and the user&apos;s own caps is in force, and the user cannot raise theirs above these. A
              submission whose hold would pass a cap is refused (402), and a running endpoint that reaches it is stopped. Blank: no
              cap.
            </Dialog.Description>
            {limits.data && <CapsForm userId={user.user_id} limits={limits.data} onSaved={saved} />}
          </Dialog.Content>
        </Dialog.Portal>
      </Dialog.Root>
    </div>
  );
}
