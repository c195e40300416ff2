"""Figures of the calls each endpoint took through this platform process, kept in memory.

The proxy records every call that reached an endpoint's server (or tried to): its status
class, its latency and whether it woke the endpoint (a cold start). A call refused before
an upstream URL was found (no such endpoint, stopped, out of credits) is not recorded, so
only existing endpoints take memory.

- Counters (requests, by status class, cold starts) run from the first call this process
  forwarded: they **reset when the platform restarts**, and each platform process behind a
  load balancer counts only its own calls.
- Latency is the time from the call's arrival to the endpoint's response headers (a
  streamed answer's later chunks are not in it; a wake is), in milliseconds. Its
  percentiles are exact over the last :data:`LATENCY_WINDOW` calls (a rolling window).
- A cold start is a wake this process asked the gateway for, counted even when the
  endpoint did not run within the call's wait (the call then answered 503).

Recording is a few dictionary and deque operations on the event loop (no lock, no I/O), so
a warm call costs nothing measurable; percentiles are computed only when read.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gridweave_clients.platform.endpoints import EndpointStatsResponse

__all__ = ["LATENCY_WINDOW", "EndpointStats", "percentile"]

#: How many of an endpoint's latest calls the latency percentiles are taken over.
LATENCY_WINDOW = 1000


def percentile(sorted_values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile (``fraction`` in (0, 1]) of ascending values; None if none."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass
class _Figures:
    since: datetime
    requests: int = 0
    ok: int = 0  # 1xx-3xx
    client_errors: int = 0  # 4xx
    server_errors: int = 0  # 5xx from the endpoint
    unreachable: int = 0  # no answer (a transport error)
    cold_starts: int = 0
    last_cold_start_ms: float | None = None
    last_request_at: datetime | None = None
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))


@dataclass
class EndpointStats:
    """Each endpoint's figures, keyed by the owner and the endpoint's name."""

    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    _figures: dict[tuple[str, str], _Figures] = field(default_factory=dict)

    def _of(self, user_id: str, name: str) -> _Figures:
        key = (user_id, name)
        figures = self._figures.get(key)
        if figures is None:
            figures = self._figures[key] = _Figures(since=datetime.now(UTC))
        return figures

    def record_call(
        self, *, user_id: str, name: str, status: int | None, latency_seconds: float
    ) -> None:
        """One call's outcome: its HTTP status (None: the endpoint never answered)."""
        figures = self._of(user_id, name)
        figures.requests += 1
        figures.last_request_at = datetime.now(UTC)
        figures.latencies_ms.append(latency_seconds * 1000.0)
        if status is None:
            figures.unreachable += 1
        elif status >= 500:
            figures.server_errors += 1
        elif status >= 400:
            figures.client_errors += 1
        else:
            figures.ok += 1

    def record_cold_start(self, *, user_id: str, name: str, wake_seconds: float) -> None:
        """A call woke the endpoint; the wake took ``wake_seconds``."""
        figures = self._of(user_id, name)
        figures.cold_starts += 1
        figures.last_cold_start_ms = wake_seconds * 1000.0

    def forget(self, *, user_id: str, name: str) -> None:
        """Drop an endpoint's figures."""
        self._figures.pop((user_id, name), None)

    def snapshot(self, *, user_id: str, name: str) -> EndpointStatsResponse:
        """The endpoint's figures now (all zero when it took no call since the start)."""
        figures = self._figures.get((user_id, name))
        if figures is None:
            return EndpointStatsResponse(
                name=name, since=self.started_at, process_started_at=self.started_at
            )
        latencies = sorted(figures.latencies_ms)
        return EndpointStatsResponse(
            name=name,
            since=figures.since,
            process_started_at=self.started_at,
            requests=figures.requests,
            ok=figures.ok,
            client_errors=figures.client_errors,
            server_errors=figures.server_errors,
            unreachable=figures.unreachable,
            cold_starts=figures.cold_starts,
            last_cold_start_ms=figures.last_cold_start_ms,
            last_request_at=figures.last_request_at,
            latency_samples=len(latencies),
            latency_p50_ms=percentile(latencies, 0.50),
            latency_p90_ms=percentile(latencies, 0.90),
            latency_p99_ms=percentile(latencies, 0.99),
        )
