"""The gateway's own Prometheus series, on the app's registry (``GET /metrics``).

Everything here is written on the gateway's event loop (the scheduling loop's pass
listener, the usage reporter, the requeue hook), never read from the state it describes
while ``/metrics`` renders: the gauges are set after each pass, which runs on every change
and at least every ``GATEWAY_PASS_INTERVAL_SECONDS``, so they lag by at most that long.

Series (all prefixed ``gridweave_gateway_``):

- ``queue_length{priority}``: jobs waiting for a placement (Pending, not held), by priority;
- ``placements_total`` / ``placement_failures_total``: Allocated writes that succeeded or
  failed (a failed one waits for the next pass);
- ``placement_latency_seconds``: a job's creation to its Allocated write (the creation
  time is the apiserver's, whole seconds);
- ``pass_seconds``: one scheduling pass, decision and writes;
- ``vram_allocation_rate``: held VRAM / VRAM of the GPUs that take work;
- ``fragmented_vram_mb`` / ``fragmentation_ratio``: free VRAM the typical waiting request
  cannot use, and its share of the free VRAM (:class:`~job_gateway.scheduler.Fragmentation`);
  these three are measured at most once a second and within 5% of the loop's time;
- ``requeues_total``: jobs sent back to Pending (``attempts`` + 1), counted from the job
  informer whoever wrote it (:meth:`GatewayMetrics.requeued`);
- ``usage_reports_total{outcome}``: usage reports to metering, ``sent`` or ``failed``
  (each failed attempt; the report is tried again), and ``usage_reports_waiting``.

With the capacity gauges, the GPUs' own series (``gridweave_gpu_*``: VRAM total, held and
in use, utilization, per node and GPU) are set: :mod:`job_gateway.gpu_metrics`.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from job_gateway.gpu_metrics import GpuGauges
from job_gateway.scheduler import PlacementRequest, Scheduler
from job_gateway.scheduling import PassReport

__all__ = ["GatewayMetrics"]

_PREFIX = "gridweave_gateway_"
#: Placement latency, seconds: from a few ms (an idle cluster) to an hour in the queue.
_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
_PASS_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
#: Fragmentation and the allocation rate walk every GPU (and every multi-GPU request shape
#: on every node): measured at most once per this many seconds, and never more than
#: CAPACITY_SHARE of the loop's time (a pass in between schedules one measurement at the
#: end of the wait, so the gauges are never left stale).
CAPACITY_EVERY_S = 1.0
CAPACITY_SHARE = 0.05


class GatewayMetrics:
    """The gateway's series on ``registry``, and the hooks that update them."""

    def __init__(
        self, registry: CollectorRegistry, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._clock = clock
        self._capacity_at = float("-inf")
        self._capacity_every = CAPACITY_EVERY_S
        self._capacity_timer: asyncio.TimerHandle | None = None
        self._measure_capacity: Callable[[], None] | None = None
        self._priorities: set[int] = set()
        self.queue_length = Gauge(
            f"{_PREFIX}queue_length",
            "Jobs waiting for a placement, by priority",
            ["priority"],
            registry=registry,
        )
        self.placements = Counter(
            f"{_PREFIX}placements", "Placements written (Allocated)", registry=registry
        )
        self.placement_failures = Counter(
            f"{_PREFIX}placement_failures",
            "Allocated writes that failed (the job waits for the next pass)",
            registry=registry,
        )
        self.placement_latency = Histogram(
            f"{_PREFIX}placement_latency_seconds",
            "From a job's creation to its Allocated write",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.pass_seconds = Histogram(
            f"{_PREFIX}pass_seconds",
            "One scheduling pass: decision and status writes",
            buckets=_PASS_BUCKETS,
            registry=registry,
        )
        self.vram_allocation_rate = Gauge(
            f"{_PREFIX}vram_allocation_rate",
            "Held VRAM / VRAM of the GPUs that take work",
            registry=registry,
        )
        self.fragmented_vram_mb = Gauge(
            f"{_PREFIX}fragmented_vram_mb",
            "Free VRAM (MiB) the typical waiting request cannot use",
            registry=registry,
        )
        self.fragmentation_ratio = Gauge(
            f"{_PREFIX}fragmentation_ratio",
            "Fragmented VRAM / free VRAM on the GPUs that take work",
            registry=registry,
        )
        self.requeues = Counter(
            f"{_PREFIX}requeues", "Jobs sent back to Pending (requeued)", registry=registry
        )
        self.usage_reports = Counter(
            f"{_PREFIX}usage_reports",
            "Usage reports to metering by outcome (sent, or a failed attempt)",
            ["outcome"],
            registry=registry,
        )
        self.usage_reports_waiting = Gauge(
            f"{_PREFIX}usage_reports_waiting",
            "Finished jobs whose usage is not reported yet",
            registry=registry,
        )
        for outcome in ("sent", "failed"):
            self.usage_reports.labels(outcome)  # both series exist from the start
        self.gpus = GpuGauges(registry)

    # -- hooks ------------------------------------------------------------------------------

    def requeued(self, count: int = 1) -> None:
        """``count`` jobs went back to Pending (the gateway calls it from its job informer)."""
        self.requeues.inc(count)

    def usage_report_sent(self) -> None:
        """A job's usage is recorded by metering and marked on the job."""
        self.usage_reports.labels("sent").inc()

    def usage_report_failed(self) -> None:
        """An attempt to report a job's usage failed; it is tried again."""
        self.usage_reports.labels("failed").inc()

    def set_usage_reports_waiting(self, count: int) -> None:
        """The finished jobs whose report is still due."""
        self.usage_reports_waiting.set(count)

    def observe_pass(
        self,
        report: PassReport,
        *,
        waiting: Iterable[PlacementRequest],
        scheduler: Scheduler,
    ) -> None:
        """Everything one pass changed: placements, latency, the queue, the capacity gauges.

        Called on the event loop (the scheduling loop's pass listener).
        """
        allocations = scheduler.allocations
        self.placements.inc(report.written)
        self.placement_failures.inc(report.failed)
        self.pass_seconds.observe(report.seconds)
        now = self._clock()
        for placement in report.decision.placements:
            if placement.key in allocations:  # a failed write released its hold
                self.placement_latency.observe(max(0.0, now - placement.request.submitted_at))
        # a waiting job that holds GPUs was just placed (the informer has not said so yet)
        queued = [request for request in waiting if request.key not in allocations]
        self._set_queue(queued)
        self._measure_capacity = lambda: self._set_capacity(scheduler, queued)
        if self._capacity_timer is None:  # else one measurement is due already
            wait = self._capacity_at + self._capacity_every - time.monotonic()
            if wait <= 0:
                self._measure_latest()
            else:
                self._capacity_timer = asyncio.get_running_loop().call_later(
                    wait, self._measure_latest
                )

    def close(self) -> None:
        """Cancel a measurement still due (the scheduler is closing)."""
        if self._capacity_timer is not None:
            self._capacity_timer.cancel()
            self._capacity_timer = None

    def _measure_latest(self) -> None:
        self._capacity_timer = None
        if self._measure_capacity is None:
            return
        started = time.monotonic()
        self._measure_capacity()
        self._capacity_at = time.monotonic()
        # at most CAPACITY_SHARE of the loop's time: a slow measurement comes less often
        self._capacity_every = max(CAPACITY_EVERY_S, (self._capacity_at - started) / CAPACITY_SHARE)

    def _set_capacity(self, scheduler: Scheduler, queued: list[PlacementRequest]) -> None:
        fragmentation = scheduler.fragmentation(queued)
        self.fragmented_vram_mb.set(fragmentation.unusable_mb)
        self.fragmentation_ratio.set(fragmentation.fraction)
        self.vram_allocation_rate.set(scheduler.allocation_rate())
        self.gpus.update(scheduler.inventory, scheduler.allocations.held_mb)

    def _set_queue(self, queued: Iterable[PlacementRequest]) -> None:
        counts = Tally(request.priority for request in queued)
        for priority in self._priorities - counts.keys():
            self.queue_length.labels(str(priority)).set(0)  # emptied: 0, not the last count
        for priority, count in counts.items():
            self.queue_length.labels(str(priority)).set(count)
        self._priorities |= counts.keys()
