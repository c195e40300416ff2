"""Range queries against a Prometheus's HTTP API (``GET /api/v1/query_range``).

Only the platform's own queries are sent (:mod:`platform_service.services.console`); the
answer's matrix becomes :class:`~gridweave_clients.platform.console.ChartSeries`, its
points that are no number (``NaN``: a quantile of no requests; ``+Inf``) left out, since
JSON has no such values and a chart draws a gap there anyway.
"""

from __future__ import annotations

import math
from typing import Any

import httpx

from gridweave_clients.platform.console import ChartSeries
from platform_service.errors import MetricsUnavailable

__all__ = ["PROMETHEUS_URL_SETTING", "query_range"]

#: The setting that names the Prometheus (the all-in-one sets it).
PROMETHEUS_URL_SETTING = "PLATFORM_PROMETHEUS_URL"


def _unavailable(url: str, reason: str) -> MetricsUnavailable:
    return MetricsUnavailable(
        f"the Prometheus at {url} ({PROMETHEUS_URL_SETTING}) did not answer: {reason}",
        setting=PROMETHEUS_URL_SETTING,
        url=url,
    )


def _points(values: list[list[Any]]) -> list[tuple[float, float]]:
    points = []
    for stamp, text in values:
        value = float(text)
        if math.isfinite(value):
            points.append((float(stamp), value))
    return points


async def query_range(
    http: httpx.AsyncClient, promql: str, *, start: float, end: float, step: int
) -> list[ChartSeries]:
    """Every series ``promql`` answers from ``start`` to ``end`` (unix seconds), a point
    every ``step`` seconds, ordered by their labels.

    Raises:
        MetricsUnavailable: Prometheus cannot be reached or refused the query.
    """
    url = str(http.base_url).rstrip("/")
    try:
        response = await http.get(
            "/api/v1/query_range",
            params={"query": promql, "start": start, "end": end, "step": step},
        )
    except httpx.HTTPError as exc:
        raise _unavailable(url, str(exc) or type(exc).__name__) from exc
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code != 200 or body.get("status") != "success":
        reason = body.get("error") or f"HTTP {response.status_code}"
        raise _unavailable(url, str(reason)[:500])
    series = [
        ChartSeries(
            labels={str(k): str(v) for k, v in item.get("metric", {}).items()},
            points=_points(item.get("values", [])),
        )
        for item in body.get("data", {}).get("result", [])
    ]
    return sorted(series, key=lambda one: sorted(one.labels.items()))
