"""``/metrics`` (Prometheus) and ``/healthz`` for every service.

Each app owns a :class:`prometheus_client.CollectorRegistry`, so several apps in one
process (tests) never collide. Services add their own counters to ``app.state.metrics``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from anyio import CapacityLimiter, to_thread
from fastapi import FastAPI, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HealthCheck", "ServiceMetrics", "install_health_and_metrics"]

HealthCheck = Callable[[], bool]


@dataclass(frozen=True)
class ServiceMetrics:
    """The per-app registry and the request metrics every service records."""

    registry: CollectorRegistry
    requests: Counter
    latency: Histogram

    @classmethod
    def create(cls, service: str) -> ServiceMetrics:
        """A fresh registry with ``gridweave_http_requests_total`` and a latency histogram."""
        registry = CollectorRegistry()
        requests = Counter(
            "gridweave_http_requests",
            "HTTP requests served",
            ["service", "method", "route", "status"],
            registry=registry,
        )
        latency = Histogram(
            "gridweave_http_request_seconds",
            "HTTP request latency",
            ["service", "route"],
            registry=registry,
        )
        return cls(registry=registry, requests=requests, latency=latency)


#: The ``route`` label of a request that never reached a route, by status.
_UNROUTED = {401: "unauthorized"}


class _RequestMetricsMiddleware:
    """Pure ASGI middleware (cheaper than BaseHTTPMiddleware) counting requests by route."""

    def __init__(self, app: ASGIApp, service: str, metrics: ServiceMetrics) -> None:
        self.app = app
        self.service = service
        self.metrics = metrics
        # The labelled series, looked up once per (method, route, status): ``labels()`` takes
        # a lock and checks the label values on every call.
        self._series: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def _series_for(self, method: str, route: str, status: str) -> tuple[Any, Any]:
        key = (method, route, status)
        series = self._series.get(key)
        if series is None:
            series = (
                self.metrics.requests.labels(self.service, method, route, status),
                self.metrics.latency.labels(self.service, route),
            )
            self._series[key] = series
        return series

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note_status)
        finally:
            path = getattr(scope.get("route"), "path", None)
            # The token middleware refuses a request before routing: no route to name.
            route = path if isinstance(path, str) else _UNROUTED.get(status, "unmatched")
            requests, latency = self._series_for(scope["method"], route, str(status))
            requests.inc()
            latency.observe(time.perf_counter() - started)


def install_health_and_metrics(
    app: FastAPI, service: str, health_check: HealthCheck | None = None
) -> ServiceMetrics:
    """Mount ``GET /healthz`` and ``GET /metrics`` and record every request; no auth on either."""
    metrics = ServiceMetrics.create(service)
    app.state.metrics = metrics

    app.add_middleware(_RequestMetricsMiddleware, service=service, metrics=metrics)

    # A thread of its own: the check never queues behind requests holding the shared worker
    # threads (a slow database call, a slow client), so a probe answers while they wait.
    health_threads = CapacityLimiter(1)

    # HEAD too: load balancers probe with it.
    @app.api_route("/healthz", methods=["GET", "HEAD"], include_in_schema=False)
    async def healthz() -> Response:
        healthy = True
        if health_check is not None:
            healthy = await to_thread.run_sync(health_check, limiter=health_threads)
        body = b'{"status":"ok"}' if healthy else b'{"status":"unhealthy"}'
        return Response(body, status_code=200 if healthy else 503, media_type="application/json")

    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return metrics
