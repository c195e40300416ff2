import { useQuery, useQueryClient } from "@tanstack/react-query";
import { lazy, Suspense, useEffect } from "react";
import { Navigate, Route, Routes, useLocation, useNavigate } from "react-router";
import { SESSION_EXPIRED, type Schemas, api, unwrap } from "./api/client";
import { takeEarly } from "./api/early";
import { Layout } from "./components/Layout";
import { Jobs, jobsPageQuery, NO_FILTERS } from "./pages/Jobs";
import { SignIn } from "./pages/SignIn";

// Every page but the jobs page and sign-in (a few kB, where an ended session lands) loads
// when first shown (Recharts, Radix's dialog, the admin pages): /jobs paints with the main
// script alone.
const Overview = lazy(() => import("./pages/Overview").then((m) => ({ default: m.Overview })));
const JobDetail = lazy(() => import("./pages/JobDetail").then((m) => ({ default: m.JobDetail })));
const Maps = lazy(() => import("./pages/Maps").then((m) => ({ default: m.Maps })));
const MapDetail = lazy(() => import("./pages/MapDetail").then((m) => ({ default: m.MapDetail })));
const Endpoints = lazy(() => import("./pages/Endpoints").then((m) => ({ default: m.Endpoints })));
const EndpointDetail = lazy(() =>
  import("./pages/EndpointDetail").then((m) => ({ default: m.EndpointDetail })),
);
const Keys = lazy(() => import("./pages/Keys").then((m) => ({ default: m.Keys })));
const Credits = lazy(() => import("./pages/Credits").then((m) => ({ default: m.Credits })));
const Nodes = lazy(() => import("./pages/admin/Nodes").then((m) => ({ default: m.Nodes })));
const RegistryQuotas = lazy(() => import("./pages/admin/RegistryQuotas").then((m) => ({ default: m.RegistryQuotas })));
const Diagnostics = lazy(() => import("./pages/admin/Diagnostics").then((m) => ({ default: m.Diagnostics })));
const JoinKeys = lazy(() => import("./pages/admin/JoinKeys").then((m) => ({ default: m.JoinKeys })));
const Users = lazy(() => import("./pages/admin/Users").then((m) => ({ default: m.Users })));

export function useMe() {
  return useQuery({
    queryKey: ["me"],
    queryFn: async () =>
      (await takeEarly<Schemas["UserResponse"]>("/v1/me")) ?? unwrap(await api.GET("/v1/me")),
    retry: false,
    staleTime: 60_000,
  });
}

/** An ended session sends the user to sign-in; after it, back to the page they were on. */
function useSessionExpiry() {
  const navigate = useNavigate();
  const location = useLocation();
  const queries = useQueryClient();
  useEffect(() => {
    const expired = () => {
      if (location.pathname === "/sign-in") return;
      queries.clear();
      const next = location.pathname + location.search;
      navigate(`/sign-in?next=${encodeURIComponent(next)}`, { replace: true });
    };
    window.addEventListener(SESSION_EXPIRED, expired);
    return () => window.removeEventListener(SESSION_EXPIRED, expired);
  }, [navigate, location, queries]);
}

function Signed({ admin = false, children }: { admin?: boolean; children: React.ReactNode }) {
  const me = useMe();
  const location = useLocation();
  const queries = useQueryClient();
  useEffect(() => {
    // the jobs page's data is asked beside /v1/me, not after it
    if (location.pathname === "/jobs") void queries.prefetchQuery(jobsPageQuery(NO_FILTERS, undefined));
  }, [location.pathname, queries]);
  if (me.isPending) return <p className="p-8 text-slate-600">Loading…</p>;
  if (me.isError) {
    const next = encodeURIComponent(location.pathname + location.search);
    return <Navigate to={`/sign-in?next=${next}`} replace />;
  }
  if (admin && me.data.role !== "admin") return <p className="p-8">This page is for admins.</p>;
  return (
    <Layout user={me.data}>
      <Suspense fallback={<p>Loading…</p>}>{children}</Suspense>
    </Layout>
  );
}

export function App() {
  useSessionExpiry();
  return (
    <Routes>
      <Route path="/sign-in" element={<SignIn />} />
      <Route path="/" element={<Signed><Overview /></Signed>} />
      <Route path="/jobs" element={<Signed><Jobs /></Signed>} />
      <Route path="/jobs/:jobId" element={<Signed><JobDetail /></Signed>} />
      <Route path="/maps" element={<Signed><Maps /></Signed>} />
      <Route path="/maps/:mapId" element={<Signed><MapDetail /></Signed>} />
      <Route path="/endpoints" element={<Signed><Endpoints /></Signed>} />
      <Route path="/endpoints/:name" element={<Signed><EndpointDetail /></Signed>} />
      <Route path="/credits" element={<Signed><Credits /></Signed>} />
      <Route path="/keys" element={<Signed><Keys /></Signed>} />
      <Route path="/admin/nodes" element={<Signed admin><Nodes /></Signed>} />
      <Route path="/admin/join-keys" element={<Signed admin><JoinKeys /></Signed>} />
      <Route path="/admin/registry" element={<Signed admin><RegistryQuotas /></Signed>} />
      <Route path="/admin/diagnostics" element={<Signed admin><Diagnostics /></Signed>} />
      <Route path="/admin/users" element={<Signed admin><Users /></Signed>} />
      <Route path="*" element={<Navigate to="/" replace />} />
    </Routes>
  );
}
