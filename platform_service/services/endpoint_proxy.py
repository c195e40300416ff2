"""Calls to a user's endpoint, proxied to its Ray Serve route; a scaled-to-zero one woken.

``/v1/endpoints/{name}/{path}`` goes to ``{status.url}/{path}`` (``-/...``, the replicas'
own routes, excepted: 404) with the query, the body
and the headers, less the hop-by-hop ones and the caller's credentials (the API key, the
dashboard's cookie, identity headers): the model never sees them. The answer is streamed
back chunk by chunk as it arrives (server-sent events pass token by token).

An endpoint that is not running:

- Stopped with reason ``Idle`` (scaled to zero), Pending or Deploying: the gateway is asked
  to wake it and the call waits for it (``wake_seconds`` at most; concurrent calls share one
  deployment at the gateway), then goes through. Still not running: 503
  ``endpoint_starting`` (a Pending one's message says why it waits: its reason and message,
  e.g. ``RealGpuBusy``).
- Stopped for credits: 402 ``endpoint_out_of_credits``; for a spending cap: 402
  ``endpoint_spending_limit``; stopped otherwise: 409
  ``endpoint_stopped``; Failed: 503 ``endpoint_failed``; each with the reason and message.

The upstream URL of a running endpoint is remembered for ``CACHE_SECONDS`` (a warm call
costs no gateway round trip). A route Ray Serve does not have (the endpoint scaled to zero
since, or was just woken and its route has not reached Serve's proxy yet) answers Serve's
own 404, and an endpoint's server that refuses the connection never saw the call: neither
is passed on; the endpoint is looked up again (and woken) and the call sent again after a
short backoff, until ``wake_seconds`` have passed.

Each call that found the endpoint's URL is recorded in :attr:`EndpointProxy.stats` (its
status, its latency to the response headers, a wake as a cold start): in memory, see
``services/endpoint_stats.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio
import httpx
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from gridweave_clients.gateway import endpoints as gw
from gridweave_controller.phases import EndpointPhase, EndpointStopReason
from gridweave_runtime.serve_key import SERVE_KEY_HEADER
from platform_service.errors import EndpointNotServing, EndpointUnreachable, NotFound
from platform_service.services.downstream import as_user, downstream_errors
from platform_service.services.endpoint_stats import EndpointStats
from platform_service.services.endpoints import EndpointServices, get_own_endpoint

__all__ = ["CACHE_SECONDS", "HOP_BY_HOP", "RESERVED_PREFIX", "EndpointProxy", "forwarded_headers"]

#: The replicas' own routes (``-/gw/stats``, the gateway's probe): never reached by users.
RESERVED_PREFIX = "-/"
#: How long a running endpoint's upstream URL is used without asking the gateway again.
CACHE_SECONDS = 2.0
#: Headers that describe one connection, never forwarded (RFC 9110 7.6.1).
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# The caller's credentials and identity, and what the client recomputes.
_NOT_FORWARDED = HOP_BY_HOP | {
    "host",
    "content-length",
    "authorization",
    "cookie",
    "x-csrf-token",
    "x-gridweave-user",
    "x-gridweave-role",
    "x-gridweave-proxy",  # the dashboard's proxy secret (PLATFORM_DASHBOARD_PROXY_SECRET)
    SERVE_KEY_HEADER,  # the upstream client's own (a caller's would replace it)
}
# Transport errors of a call that never reached the endpoint (safe to send again).
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_STARTING = frozenset({EndpointPhase.PENDING, EndpointPhase.DEPLOYING})


def forwarded_headers(headers: Mapping[str, str], *, request: bool) -> dict[str, str]:
    """``headers`` less the hop-by-hop ones (and those ``Connection`` names); a request's
    also less the caller's credentials and identity."""
    dropped = _NOT_FORWARDED if request else HOP_BY_HOP
    connection = ",".join(value for name, value in headers.items() if name.lower() == "connection")
    named = {token.strip().lower() for token in connection.split(",")}
    return {
        name: value
        for name, value in headers.items()
        if name.lower() not in dropped and name.lower() not in named
    }


def _is_serve_route_missing(response: httpx.Response, body: bytes) -> bool:
    """Ray Serve's own 404 for a route it does not have (the app was deleted)."""
    return response.status_code == 404 and body.startswith(b"Path '") and b"not found" in body


def _check_route(path: str) -> None:
    """404 for a path that is not one of the endpoint's own routes: its replicas' reserved
    routes (``-/...``), and any ``.`` or ``..`` segment or backslash (the path arrives
    percent-decoded, and the upstream URL would drop the dot segments: ``..%2F<another
    endpoint's id>`` would reach another user's endpoint on the same Serve proxy)."""
    segments = path.split("/")
    if path.startswith(RESERVED_PREFIX) or "\\" in path or {".", ".."} & set(segments):
        raise NotFound("no such route of the endpoint", resource="endpoint_route", id=path[:200])


def _check_upstream(base: str, upstream: httpx.URL, path: str) -> None:
    """The URL about to be called is under the endpoint's own route, whatever the client
    library made of the path (a second guard behind :func:`_check_route`)."""
    prefix = httpx.URL(base).path.rstrip("/") + "/"
    if not upstream.path.startswith(prefix) or upstream.path[len(prefix) :].startswith(
        RESERVED_PREFIX
    ):
        raise NotFound("no such route of the endpoint", resource="endpoint_route", id=path[:200])


@dataclass
class EndpointProxy:
    """Forwards calls to running endpoints, waking scaled-to-zero ones."""

    services: EndpointServices
    http: httpx.AsyncClient
    stats: EndpointStats = field(default_factory=EndpointStats)
    _urls: dict[str, tuple[str, float]] = field(default_factory=dict)

    async def aclose(self) -> None:
        """Close the upstream connections."""
        await self.http.aclose()

    async def forward(
        self,
        *,
        user_id: str,
        name: str,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
    ) -> Response:
        """The endpoint's answer to the call, streamed; see the module's rules."""
        _check_route(path)
        started = time.monotonic()
        cache_key = f"{user_id}\x00{name}"
        cached = self._urls.get(cache_key)
        if cached is not None and cached[1] >= time.monotonic():
            url = cached[0]
        else:  # looked up again at least every CACHE_SECONDS, however busy the endpoint
            url = await self._serving_url(user_id=user_id, name=name)
            self._urls[cache_key] = (url, time.monotonic() + CACHE_SECONDS)
        outgoing = forwarded_headers(headers, request=True)
        deadline = time.monotonic() + self.services.wake_seconds
        delay = 0.05
        while True:
            upstream = self.http.build_request(
                method,
                f"{url.rstrip('/')}/{path}",
                params=httpx.QueryParams(query),
                headers=outgoing,
                content=body,
            )
            _check_upstream(url, upstream.url, path)
            try:
                response = await self.http.send(upstream, stream=True)
            except httpx.TransportError as exc:
                self._urls.pop(cache_key, None)
                # only a call that never left may go again: another may have been applied
                if not isinstance(exc, _NOT_SENT) or time.monotonic() >= deadline:
                    self._record(user_id, name, None, started)
                    raise EndpointUnreachable(
                        f"endpoint {name} did not answer: {type(exc).__name__}", endpoint=name
                    ) from exc
            else:
                if response.status_code != 404:
                    self._record(user_id, name, response.status_code, started)
                    return _streamed(response)
                content = await response.aread()
                await response.aclose()
                if time.monotonic() >= deadline or not _is_serve_route_missing(response, content):
                    self._record(user_id, name, response.status_code, started)
                    return Response(
                        content,
                        status_code=response.status_code,
                        headers=forwarded_headers(response.headers, request=False),
                    )
                self._urls.pop(cache_key, None)
            # scaled to zero since it was looked up, or just woken and its route not yet at
            # Serve's proxy: look again (waking it), and send again after a short backoff
            await asyncio.sleep(delay)
            delay = min(1.0, delay * 2)
            url = await self._serving_url(user_id=user_id, name=name)
            self._urls[cache_key] = (url, time.monotonic() + CACHE_SECONDS)

    def _record(self, user_id: str, name: str, status: int | None, started: float) -> None:
        self.stats.record_call(
            user_id=user_id, name=name, status=status, latency_seconds=time.monotonic() - started
        )

    async def _serving_url(self, *, user_id: str, name: str) -> str:
        """The running endpoint's upstream URL, after a (bounded) wake if it needs one."""
        endpoint = await get_own_endpoint(self.services, user_id=user_id, name=name)
        if _wakes(endpoint):
            quota_of = self.services.quota_of
            quota = None if quota_of is None else await quota_of(user_id)
            wake = gw.wake_endpoint(endpoint.id, wait=self.services.wake_seconds, quota=quota)
            waking = time.monotonic()
            try:
                with downstream_errors("job_gateway"):
                    endpoint = await self.services.gateway.run(as_user(wake, user_id))
            finally:
                self.stats.record_cold_start(
                    user_id=user_id, name=name, wake_seconds=time.monotonic() - waking
                )
        if endpoint.phase is EndpointPhase.RUNNING and endpoint.url:
            return endpoint.url
        raise _not_serving(name, endpoint, self.services.wake_seconds)


def _wakes(endpoint: gw.EndpointResponse) -> bool:
    if endpoint.phase in _STARTING:
        return True
    return endpoint.phase is EndpointPhase.STOPPED and endpoint.reason == EndpointStopReason.IDLE


def _not_serving(
    name: str, endpoint: gw.EndpointResponse, wake_seconds: float
) -> EndpointNotServing:
    details = {"endpoint": name, "phase": endpoint.phase.value, "reason": endpoint.reason}
    if endpoint.phase in _STARTING or _wakes(endpoint):
        # why it waits, the scheduler's (RealGpuBusy, ...): a Pending endpoint's reason, a
        # woken one's waking reason (it stays Stopped until placed)
        why = ""
        if endpoint.phase is EndpointPhase.PENDING and endpoint.reason:
            why = f" (Pending, {endpoint.reason}: {endpoint.message or 'no message'})"
        elif endpoint.waking_reason:
            why = f" (waking, {endpoint.waking_reason}: {endpoint.waking_message or 'no message'})"
        return EndpointNotServing(
            f"endpoint {name} did not start within {wake_seconds:g} s{why}: try again",
            status_code=503,
            code="endpoint_starting",
            **details,
        )
    if endpoint.phase is EndpointPhase.FAILED:
        return EndpointNotServing(
            f"endpoint {name} failed ({endpoint.reason}): {endpoint.message or 'no message'}",
            status_code=503,
            code="endpoint_failed",
            **details,
        )
    if endpoint.reason == EndpointStopReason.OUT_OF_CREDITS:
        return EndpointNotServing(
            f"endpoint {name} was stopped: its owner ran out of credits",
            status_code=402,
            code="endpoint_out_of_credits",
            **details,
        )
    if endpoint.reason == EndpointStopReason.SPENDING_LIMIT:
        return EndpointNotServing(
            f"endpoint {name} was stopped: its owner reached a spending limit "
            f"({endpoint.message or 'no message'})",
            status_code=402,
            code="endpoint_spending_limit",
            **details,
        )
    return EndpointNotServing(
        f"endpoint {name} is {endpoint.phase.value} ({endpoint.reason or 'no reason'}): "
        "deploy it again",
        status_code=409,
        code="endpoint_stopped",
        **details,
    )


class _Relayed(StreamingResponse):
    """The upstream answer passed on as its bytes arrive, the upstream closed in a finally
    however the relay ends: read to its end, the client gone (Starlette then raises, or
    cancels the relay, and skips any background task), or an error."""

    def __init__(self, upstream: httpx.Response) -> None:
        super().__init__(
            upstream.aiter_raw(),
            status_code=upstream.status_code,
            headers=forwarded_headers(upstream.headers, request=False),
        )
        self.upstream = upstream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):  # closed even when the relay was cancelled
                await self.upstream.aclose()


def _streamed(response: httpx.Response) -> StreamingResponse:
    """The upstream answer passed on as its bytes arrive; the connection closed after."""
    return _Relayed(response)
