"""The admin console's charts: a fixed set of named PromQL queries over the last minutes.

Per service (the ``service`` label the HTTP middleware of :mod:`gridweave_runtime.metrics`
puts on ``gridweave_http_requests_total`` and ``gridweave_http_request_seconds``): requests
per second, server errors (5xx) per second, p50 and p99 latency; Prometheus's own scrapes
(``/metrics``) and health probes (``/healthz``) are left out, or they would be most of the
traffic. Of the gateway (:mod:`job_gateway.metrics`): jobs waiting, placements and failed
placements per minute. Per node and GPU (:mod:`job_gateway.gpu_metrics`): VRAM total, held
and in use, and utilization.

Nobody sends PromQL: the queries are declared here, the caller picks only the window
(:data:`~gridweave_clients.platform.console.MIN_CONSOLE_MINUTES` to
:data:`~gridweave_clients.platform.console.MAX_CONSOLE_MINUTES`), and about
:data:`POINTS` points are asked per series, never one more often than the scrape.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx

from gridweave_clients.platform.console import ChartUnit, ConsoleChart, ConsoleChartsResponse
from platform_service.errors import MetricsUnavailable
from platform_service.services.prometheus import PROMETHEUS_URL_SETTING, query_range

__all__ = ["CHARTS", "POINTS", "Chart", "read_console_charts"]

#: About this many points per series, whatever the window.
POINTS = 240
#: Never a point more often than this, seconds (the all-in-one scrapes every 5 s).
MIN_STEP_S = 5

_SERVED = 'route!~"/metrics|/healthz"'
_REQUESTS = f"gridweave_http_requests_total{{{_SERVED}}}"
_ERRORS = f'gridweave_http_requests_total{{{_SERVED},status=~"5.."}}'
_BUCKETS = f"gridweave_http_request_seconds_bucket{{{_SERVED}}}"


def _latency(quantile: float) -> str:
    return f"histogram_quantile({quantile}, sum by (service, le) (rate({_BUCKETS}[5m])))"


def _figure(metric: str, figure: str) -> str:
    return f'label_replace({metric}, "figure", "{figure}", "", "")'


@dataclass(frozen=True)
class Chart:
    """One chart of the console: its name, title, unit and query."""

    name: str
    title: str
    unit: ChartUnit
    query: str


CHARTS: tuple[Chart, ...] = (
    Chart(
        "requests",
        "Requests per second",
        "per_second",
        f"sum by (service) (rate({_REQUESTS}[1m]))",
    ),
    Chart(
        "errors",
        "Server errors (5xx) per second",
        "per_second",
        # a service without a 5xx draws a line at 0, not nothing
        f"sum by (service) (rate({_ERRORS}[1m])) or sum by (service) (rate({_REQUESTS}[1m])) * 0",
    ),
    Chart("latency_p50", "Latency, median", "seconds", _latency(0.5)),
    Chart("latency_p99", "Latency, 99th percentile", "seconds", _latency(0.99)),
    Chart(
        "queue",
        "Jobs waiting for a GPU",
        "count",
        # no priority has waited yet: 0 while the gateway is scraped, not nothing
        "sum(gridweave_gateway_queue_length) or sum(gridweave_gateway_placements_total) * 0",
    ),
    Chart(
        "placements",
        "Placements per minute",
        "per_minute",
        "sum(increase(gridweave_gateway_placements_total[1m]))",
    ),
    Chart(
        "placement_failures",
        "Failed placements per minute",
        "per_minute",
        "sum(increase(gridweave_gateway_placement_failures_total[1m]))",
    ),
    Chart(
        "gpu_memory",
        "GPU memory",
        "bytes",
        "sum by (node, gpu, figure) ("
        + " or ".join(
            _figure(f"gridweave_gpu_memory_{figure}_bytes", figure)
            for figure in ("used", "held", "total")
        )
        + ")",
    ),
    Chart(
        "gpu_utilization",
        "GPU utilization",
        "ratio",
        "sum by (node, gpu) (gridweave_gpu_utilization_ratio)",
    ),
)


async def read_console_charts(
    prometheus_url: str | None,
    *,
    minutes: int,
    timeout: float,
    now: float | None = None,
) -> ConsoleChartsResponse:
    """Every chart over the last ``minutes``, read from ``prometheus_url`` at once.

    Raises:
        MetricsUnavailable: no Prometheus is configured, or it did not answer a query.
    """
    if not prometheus_url:
        raise MetricsUnavailable(
            f"no Prometheus is configured: set {PROMETHEUS_URL_SETTING} to its URL "
            "(gridweave up sets it to the one it starts)",
            setting=PROMETHEUS_URL_SETTING,
        )
    end = time.time() if now is None else now
    start = end - minutes * 60
    step = max(MIN_STEP_S, minutes * 60 // POINTS)
    async with httpx.AsyncClient(base_url=prometheus_url, timeout=timeout, trust_env=False) as http:
        answers = await asyncio.gather(
            *(query_range(http, chart.query, start=start, end=end, step=step) for chart in CHARTS)
        )
    return ConsoleChartsResponse(
        prometheus_url=prometheus_url,
        start=start,
        end=end,
        step_seconds=step,
        charts=[
            ConsoleChart(name=chart.name, title=chart.title, unit=chart.unit, series=series)
            for chart, series in zip(CHARTS, answers, strict=True)
        ],
    )
