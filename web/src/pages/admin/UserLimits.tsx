import * as Dialog from "@radix-ui/react-dialog";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, count, errorMessage, fieldErrors, mib, type Schemas, unwrap } from "../../api/client";

type Limits = Schemas["UserLimitsResponse"];
type LimitsBody = Schemas["UserLimitsRequest"];
type Field = keyof LimitsBody & keyof Limits;
type FormText = Record<Field, string>;

/** The form's fields by their API names, each with its label and what a blank one means. */
const FIELDS: readonly { name: Field; label: string; blank: string }[] = [
  { name: "max_gpus", label: "GPU quota", blank: "no limit" },
  { name: "max_vram_mb", label: "VRAM quota (MiB)", blank: "no limit" },
  { name: "share_weight", label: "Share weight", blank: "1" },
];

/** A field's label with its API name ("GPU quota (max_gpus)"): what the CLI and the API call it too. */
function fieldName(name: string): string {
  const field = FIELDS.find((item) => item.name === name);
  return field ? `${field.label} (${name})` : name;
}

export function limitsQueryKey(userId: string) {
  return ["admin-user-limits", userId] as const;
}

/** A user's limits in words: "2 GPUs, 8 GiB VRAM; weight 2", "no quota; weight 1 (default)". */
export function limitsSummary(limits: Limits): string {
  const quotas = [
    limits.max_gpus === null ? null : count(limits.max_gpus, "GPU"),
    limits.max_vram_mb === null ? null : `${mib(limits.max_vram_mb)} VRAM`,
  ].filter((quota) => quota !== null);
  const weight = `weight ${limits.share_weight.toLocaleString("en-US")}${limits.share_weight_is_default ? " (default)" : ""}`;
  return `${quotas.length ? quotas.join(", ") : "no quota"}; ${weight}`;
}

/** The form's text for limits in force: blank where none is set (no quota, the default weight). */
function formText(limits: Limits): FormText {
  return {
    max_gpus: limits.max_gpus === null ? "" : String(limits.max_gpus),
    max_vram_mb: limits.max_vram_mb === null ? "" : String(limits.max_vram_mb),
    share_weight: limits.share_weight_is_default ? "" : String(limits.share_weight),
  };
}

/** The PUT body of the form's text: blank is null (cleared). Text that is no number at all is
 * named in ``unreadable`` and nothing is sent; every other rule (ranges, whole numbers) is
 * the API's, and its 422 names the field. */
export function limitsBody(text: FormText): { body: LimitsBody; unreadable: Record<string, string> } {
  const body: LimitsBody = {};
  const unreadable: Record<string, string> = {};
  for (const { name, blank } of FIELDS) {
    const value = text[name].trim();
    const number = Number(value);
    if (value === "") body[name] = null;
    else if (Number.isFinite(number)) body[name] = number;
    else unreadable[name] = `not a number (blank: ${blank})`;
  }
  return { body, unreadable };
}

function LimitsForm({ userId, limits, onSaved }: { userId: string; limits: Limits; onSaved: (saved: Limits) => void }) {
  const [text, setText] = useState(() => formText(limits));
  const [refusedFields, setRefusedFields] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const refuse = (named: Record<string, string>, fallback: string) => {
    setRefusedFields(named);
    const said = Object.entries(named).map(([name, message]) => `${fieldName(name)}: ${message}`);
    setError(`Not saved. ${said.length ? said.join("; ") : fallback}`);
  };
  const save = async (event: React.FormEvent) => {
    event.preventDefault();
    if (pending) return;
    const { body, unreadable } = limitsBody(text);
    if (Object.keys(unreadable).length) return refuse(unreadable, "");
    setPending(true);
    const { data, error: refused } = await api.PUT("/v1/admin/users/{user_id}/limits", { params: { path: { user_id: userId } }, body });
    setPending(false);
    if (refused || !data) return refuse(fieldErrors(refused), errorMessage(refused));
    onSaved(data);
  };
  return (
    <form onSubmit={save} noValidate className="mt-4 space-y-3 text-sm">
      {FIELDS.map(({ name, label, blank }) => (
        <div key={name}>
          <label className="block" htmlFor={`limit-${name}`}>{label}</label>
          <input
            id={`limit-${name}`}
            className="w-40 rounded border border-slate-400 px-2 py-1 aria-[invalid=true]:border-red-700"
            inputMode="decimal"
            value={text[name]}
            placeholder={blank}
            aria-invalid={name in refusedFields}
            aria-describedby={name in refusedFields ? `limit-${name}-error` : `limit-${name}-blank`}
            onChange={(e) => setText({ ...text, [name]: e.target.value })}
          />
          {name in refusedFields ? (
            <p id={`limit-${name}-error`} className="text-red-700" data-testid="field-error">{label}: {refusedFields[name]}</p>
          ) : (
            <p id={`limit-${name}-blank`} className="text-slate-700">Blank: {blank}.</p>
          )}
        </div>
      ))}
      {error && <p role="alert" className="text-red-700">{error}</p>}
      <div className="flex gap-2">
        <button type="submit" disabled={pending} className="rounded bg-slate-900 px-3 py-1 text-white disabled:opacity-60">Save limits</button>
        <Dialog.Close type="button" className="rounded border border-slate-400 px-3 py-1">Cancel</Dialog.Close>
      </div>
    </form>
  );
}

/** A user's quotas and share weight, and an Edit that opens them in a dialog (admins). */
export function UserLimits({ user, onSaved }: { user: Schemas["UserResponse"]; onSaved: (message: string) => void }) {
  const queries = useQueryClient();
  const [open, setOpen] = useState(false);
  const who = user.email ?? user.user_id;
  const limits = useQuery({
    queryKey: limitsQueryKey(user.user_id),
    queryFn: async () => unwrap(await api.GET("/v1/admin/users/{user_id}/limits", { params: { path: { user_id: user.user_id } } })),
  });
  const saved = (data: Limits) => {
    queries.setQueryData(limitsQueryKey(user.user_id), data);
    setOpen(false);
    onSaved(`Limits of ${who} saved: ${limitsSummary(data)}`);
  };
  return (
    <div className="flex items-center gap-2">
      <span data-testid="user-limits" className={limits.isError ? "text-red-700" : ""}>
        {limits.data ? limitsSummary(limits.data) : limits.isError ? errorMessage(limits.error) : "…"}
      </span>
      <Dialog.Root open={open} onOpenChange={setOpen}>
        <Dialog.Trigger disabled={!limits.data} className="text-blue-800 underline disabled:opacity-40" aria-label={`Edit the limits of ${who}`}>
          Edit
        </Dialog.Trigger>
        <Dialog.Portal>
          <Dialog.Overlay className="fixed inset-0 bg-black/40" />
          <Dialog.Content className="fixed left-1/2 top-1/4 w-[32rem] -translate-x-1/2 rounded-lg bg-white p-6 shadow-xl">
            <Dialog.Title className="text-lg font-semibold">Limits of {who}</Dialog.Title>
            <Dialog.Description className="mt-1 text-sm text-slate-700">
              Quotas bound what the user&apos;s unfinished jobs, maps and endpoints hold at once, from their next submission. The
              share weight orders users when the cluster is full: weight 2 is entitled to twice the share of weight 1.
            </Dialog.Description>
            {limits.data && <LimitsForm userId={user.user_id} limits={limits.data} onSaved={saved} />}
          </Dialog.Content>
        </Dialog.Portal>
      </Dialog.Root>
    </div>
  );
}
