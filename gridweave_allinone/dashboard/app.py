"""The dashboard's ASGI app: static files, the ``/v1`` proxy, the admins' diagnostics.

- ``/v1/...``: forwarded to the platform as it came (method, the raw path with its
  percent-encoding intact, query, cookies, CSRF header; the body streamed as it arrives,
  never held whole), the answer streamed back unbuffered (server-sent events included);
  ``X-Forwarded-Proto`` says how the browser came, so the platform marks cookies Secure over
  HTTPS. ``X-Forwarded-For`` is replaced by the one address this server saw (a client's own
  is dropped), with ``X-Gridweave-Proxy`` carrying ``WEB_PROXY_SECRET``: the platform
  believes the address only with that secret (``PLATFORM_DASHBOARD_PROXY_SECRET``), so the
  faucet's per-address limits count the browser's address, and a caller from anywhere else
  cannot name one.
- ``/-/diagnostics``: each service's ``/healthz`` and ``/metrics`` text, for admins only (the
  platform's ``/v1/me`` with the caller's cookie says who is asking).
- anything else: a file of the built app, or ``index.html`` (the app routes in the page).
  Hashed assets are cached for a year; ``index.html`` never. Each is sent as its build's
  brotli or gzip copy when the browser accepts one (``Vary: Accept-Encoding``).
"""

from __future__ import annotations

import mimetypes
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

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

__all__ = ["PROXY_SECRET_HEADER", "create_dashboard_app"]

#: The header carrying ``WEB_PROXY_SECRET`` to the platform (whoever else sends it: dropped).
PROXY_SECRET_HEADER = "x-gridweave-proxy"
#: Request headers not forwarded: hop-by-hop ones and those the proxy sets itself.
_DROPPED_REQUEST = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "upgrade",
        "x-forwarded-proto",
        "x-forwarded-for",
        PROXY_SECRET_HEADER,
    }
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
    proxy_secret = settings.proxy_secret.get_secret_value() if settings.proxy_secret else None
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
        if request.client is not None:
            # the browser's address as this server saw it (uvicorn already took a local TLS
            # terminator's X-Forwarded-For); one address, never a client's own list
            headers.append(("x-forwarded-for", request.client.host))
        if proxy_secret is not None:
            headers.append((PROXY_SECRET_HEADER, proxy_secret))
        # the path as the browser sent it: decoding it would turn "%2F" into "/" (another
        # route) and "%25" into "%"
        prefix = client.base_url.raw_path.rstrip(b"/")  # a platform under a path of its own
        target: bytes = prefix + (request.scope.get("raw_path") or request.url.path.encode())
        if request.url.query:
            target += b"?" + request.url.query.encode()
        streamed = request.method not in ("GET", "HEAD", "OPTIONS") or (
            "content-length" in request.headers or "transfer-encoding" in request.headers
        )
        upstream = client.build_request(
            request.method,
            client.base_url.copy_with(raw_path=target),
            headers=headers,
            content=request.stream() if streamed else None,
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
        accepted = request.headers.get("accept-encoding", "")
        if wanted.is_file() and wanted.is_relative_to(dist) and wanted != index:
            immutable = wanted.parent.name == "assets"  # vite names them by content hash
            cache = "public, max-age=31536000, immutable" if immutable else "no-cache"
            return _file(wanted, cache, accepted)
        return _file(index, "no-cache", accepted)

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


#: The build's precompressed copies (web/vite.config.ts), best first: (encoding, suffix).
_PRECOMPRESSED = (("br", ".br"), ("gzip", ".gz"))


def _accepts(accept_encoding: str, encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` value takes ``encoding`` (named, with no ``q=0``)."""
    for part in accept_encoding.lower().split(","):
        name, _, params = part.partition(";")
        if name.strip() == encoding:
            return params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


def _file(path: Path, cache: str, accept_encoding: str) -> FileResponse:
    """``path``, or its precompressed copy the browser accepts (brotli, then gzip)."""
    headers = {"Cache-Control": cache, "Vary": "Accept-Encoding"}
    for encoding, suffix in _PRECOMPRESSED:
        packed = path.with_name(path.name + suffix)
        if _accepts(accept_encoding, encoding) and packed.is_file():
            media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            headers["Content-Encoding"] = encoding
            return FileResponse(packed, media_type=media_type, headers=headers)
    return FileResponse(path, headers=headers)


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
