"""The dashboard's ASGI app: static files, the ``/v1`` proxy, the admins' diagnostics.

- ``/v1/...``: forwarded to the platform as it came (method, path, query, body, cookies,
  CSRF header), the answer streamed back unbuffered (server-sent events included);
  ``X-Forwarded-Proto`` says how the browser came, so the platform marks cookies Secure over
  HTTPS.
- ``/-/diagnostics``: each service's ``/healthz`` and ``/metrics`` text, for admins only (the
  platform's ``/v1/me`` with the caller's cookie says who is asking).
- anything else: a file of the built app, or ``index.html`` (the app routes in the page).
  Hashed assets are cached for a year; ``index.html`` never.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from gridweave_allinone.dashboard.settings import DEFAULT_DIST_DIR, DashboardSettings

__all__ = ["create_dashboard_app"]

#: Request headers not forwarded: hop-by-hop ones and those the proxy sets itself.
_DROPPED_REQUEST = frozenset(
    {"host", "connection", "keep-alive", "transfer-encoding", "te", "upgrade", "x-forwarded-proto"}
)
_DROPPED_RESPONSE = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length"})
_NOT_BUILT = """<!doctype html><html lang="en"><head><title>Gridweave</title></head>
<body><main><h1>The dashboard is not built</h1>
<p>Run <code>make web</code> in the Gridweave checkout, then reload.</p></main></body></html>"""


def create_dashboard_app(
    settings: DashboardSettings | None = None, *, transport: httpx.AsyncBaseTransport | None = None
) -> Starlette:
    """The dashboard app; ``transport`` replaces the network to the platform (tests)."""
    settings = settings or DashboardSettings()
    dist = (settings.dist_dir or DEFAULT_DIST_DIR).resolve()
    client = httpx.AsyncClient(
        base_url=settings.platform_url,
        transport=transport,
        timeout=httpx.Timeout(30.0, read=None),  # a log stream stays open while the job runs
        trust_env=False,
    )

    async def proxy(request: Request) -> Response:
        headers = [
            (name, value)
            for name, value in request.headers.items()
            if name.lower() not in _DROPPED_REQUEST
        ]
        headers.append(("x-forwarded-proto", request.url.scheme))
        upstream = client.build_request(
            request.method,
            request.url.path,
            params=request.url.query.encode(),
            headers=headers,
            content=await request.body(),
        )
        try:
            answer = await client.send(upstream, stream=True)
        except httpx.TransportError:
            return JSONResponse(
                {
                    "error": {
                        "code": "service_unavailable",
                        "message": "the platform is not answering",
                    }
                },
                status_code=503,
            )
        kept = [
            (k, v) for k, v in answer.headers.multi_items() if k.lower() not in _DROPPED_RESPONSE
        ]
        response = StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            background=BackgroundTask(answer.aclose),
        )
        response.raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in kept]
        return response

    async def diagnostics(request: Request) -> Response:
        me = await client.get("/v1/me", headers={"cookie": request.headers.get("cookie", "")})
        if me.status_code != 200:
            return JSONResponse({"error": {"code": "unauthorized", "message": "sign in"}}, 401)
        if me.json().get("role") != "admin":
            return JSONResponse({"error": {"code": "forbidden", "message": "for admins"}}, 403)
        services = sorted({"platform": settings.platform_url, **settings.service_urls}.items())
        found: list[dict[str, object]] = [{} for _ in services]

        async def probe(index: int, name: str, url: str) -> None:
            found[index] = await _probe(name, url, transport)

        async with anyio.create_task_group() as group:
            for index, (name, url) in enumerate(services):
                group.start_soon(probe, index, name, url)
        return JSONResponse({"services": found})

    async def static(request: Request) -> Response:
        index = dist / "index.html"
        if not index.is_file():
            return HTMLResponse(_NOT_BUILT, status_code=503)
        wanted = (dist / request.path_params["path"]).resolve()
        if wanted.is_file() and wanted.is_relative_to(dist) and wanted != index:
            immutable = wanted.parent.name == "assets"  # vite names them by content hash
            cache = "public, max-age=31536000, immutable" if immutable else "no-cache"
            return FileResponse(wanted, headers={"Cache-Control": cache})
        return FileResponse(index, headers={"Cache-Control": "no-cache"})

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await client.aclose()

    methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    routes = [
        Route("/healthz", lambda _request: JSONResponse({"status": "ok"})),
        Route("/-/diagnostics", diagnostics),
        Route("/v1/{rest:path}", proxy, methods=methods),
        Route("/{path:path}", static),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


async def _probe(
    name: str, url: str, transport: httpx.AsyncBaseTransport | None
) -> dict[str, object]:
    """One service's health and its /metrics text (empty when unreachable)."""
    async with httpx.AsyncClient(
        base_url=url, timeout=5.0, transport=transport, trust_env=False
    ) as http:
        try:
            health = await http.get("/healthz")
            metrics = await http.get("/metrics")
        except httpx.TransportError as exc:
            return {"name": name, "url": url, "healthy": False, "status": str(exc), "metrics": ""}
    return {
        "name": name,
        "url": url,
        "healthy": health.status_code == 200,
        "status": str(health.status_code),
        "metrics": metrics.text if metrics.status_code == 200 else "",
    }
