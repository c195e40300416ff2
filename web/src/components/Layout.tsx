import { useQueryClient } from "@tanstack/react-query";
import { NavLink, useNavigate } from "react-router";
import { api, type Schemas } from "../api/client";

const USER_LINKS = [
  ["/", "Overview"],
  ["/jobs", "Jobs"],
  ["/maps", "Maps"],
  ["/endpoints", "Endpoints"],
  ["/credits", "Credits & usage"],
  ["/keys", "API keys"],
] as const;
const ADMIN_LINKS = [
  ["/admin/nodes", "Nodes"],
  ["/admin/join-keys", "Join keys"],
  ["/admin/registry", "Registry"],
  ["/admin/diagnostics", "Diagnostics"],
  ["/admin/users", "Users"],
] as const;

function Link({ to, label }: { to: string; label: string }) {
  return (
    <NavLink
      to={to}
      end={to === "/"}
      className={({ isActive }) =>
        `block rounded px-3 py-1.5 text-sm ${isActive ? "bg-slate-800 text-white" : "text-slate-200 hover:bg-slate-700"}`
      }
    >
      {label}
    </NavLink>
  );
}

export function Layout({ user, children }: { user: Schemas["UserResponse"]; children: React.ReactNode }) {
  const queries = useQueryClient();
  const navigate = useNavigate();
  const signOut = async () => {
    await api.DELETE("/v1/sessions/current");
    queries.clear();
    navigate("/sign-in", { replace: true });
  };
  return (
    <div className="flex min-h-screen">
      <nav aria-label="Main" className="w-56 shrink-0 bg-slate-900 p-4">
        <p className="mb-4 text-lg font-semibold text-white">Gridweave</p>
        <ul className="space-y-1">
          {USER_LINKS.map(([to, label]) => (
            <li key={to}><Link to={to} label={label} /></li>
          ))}
        </ul>
        {user.role === "admin" && (
          <>
            <p className="mt-6 mb-2 px-3 text-xs uppercase tracking-wide text-slate-300">Admin</p>
            <ul className="space-y-1">
              {ADMIN_LINKS.map(([to, label]) => (
                <li key={to}><Link to={to} label={label} /></li>
              ))}
            </ul>
          </>
        )}
      </nav>
      <div className="flex-1">
        <header className="flex items-center justify-end gap-4 border-b border-slate-200 bg-white px-6 py-3 text-sm">
          <span data-testid="signed-in-as">{user.email ?? user.user_id}</span>
          <button type="button" onClick={signOut} className="rounded border border-slate-300 px-3 py-1 hover:bg-slate-100">
            Sign out
          </button>
        </header>
        <main className="p-6">{children}</main>
      </div>
    </div>
  );
}

export function Card({ title, children }: { title: string; children: React.ReactNode }) {
  return (
    <section className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
      <h2 className="mb-2 text-sm font-medium text-slate-600">{title}</h2>
      {children}
    </section>
  );
}

export function PhaseBadge({ phase }: { phase: string }) {
  const colour: Record<string, string> = {
    Pending: "bg-slate-200 text-slate-800",
    Allocated: "bg-sky-100 text-sky-900",
    Running: "bg-blue-100 text-blue-900",
    Completed: "bg-green-100 text-green-900",
    Failed: "bg-red-100 text-red-900",
    Cancelled: "bg-amber-100 text-amber-900",
    TimedOut: "bg-orange-100 text-orange-900",
  };
  return <span className={`rounded px-2 py-0.5 text-xs font-medium ${colour[phase] ?? "bg-slate-100"}`}>{phase}</span>;
}
