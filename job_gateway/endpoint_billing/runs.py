"""Reading an endpoint's runs for billing: which runs there are, how each ended, on which
node, GPUs and replicas, which vendor it is priced at, and which open holds belong to no
run billing still follows.

Pure (no I/O): ``billing`` reports to metering and stops endpoints. A run is known
from the gateway's views of its endpoint: the current (or last) run, ``startedAt`` to
``stoppedAt``. The status keeps no run before it: the gateway settles a run before it
writes the placement that replaces it. A run no view names (its endpoint deleted) is known
only by the holds placed for it: their references name the endpoint, the run's start and
the period.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from gridweave_clients.credit.models import OpenHoldResponse
from gridweave_clients.gateway.endpoints import EndpointResponse
from gridweave_clients.metering.endpoint_periods import (
    held_price,
    parse_period_key,
    run_micros,
)
from gridweave_clients.metering.price_source import PriceSource
from gridweave_clients.metering.pricing import Unpriced
from gridweave_controller.billing import billed_seconds

__all__ = [
    "Meter",
    "OrphanRun",
    "Run",
    "orphaned_runs",
    "priced_vendor",
    "record_gpu_indices",
    "run_seconds",
    "with_placement",
]

_SETTLED_KEPT = 32  # a late copy of a settled run's view is ignored, not billed again


@dataclass
class Run:
    """What billing knows of one run: the endpoint as last seen in it, how far it is
    recorded and held, and the replicas it ran with.

    Replicas are counted between billing's observations: from one observation to the next,
    the run is taken to run ``replicas`` (as seen at the first), split over the periods
    that stretch spans (:meth:`count_replicas`). A period's replica-seconds are what was
    counted in it, plus ``replicas`` for each second of it no pair of observations covered
    (before a restart of billing, or after the last observation of an ended run).
    """

    started_at: datetime
    view: EndpointResponse
    seen_running_at: float | None = None  # the clock when last seen Running
    next_period: int | None = None  # the first period not recorded; None: not looked up yet
    held: set[int] = field(default_factory=set)  # the periods whose hold is in place
    replicas: int = 1
    out_of_credits: bool = False
    finished: bool = False
    #: The clock (µs) at the last observation of the run Running; None: not counting.
    counted_to_us: int | None = None
    #: Per period: (replica-µs, µs) counted in it.
    counted: dict[int, tuple[int, int]] = field(default_factory=dict)

    def count_replicas(self, until: float, period_seconds: int) -> None:
        """Count ``replicas`` from the last observation to ``until`` (the clock), into each
        period the stretch spans; the stretch before the run's start is not counted."""
        if self.counted_to_us is None:
            return
        start, period = run_micros(self.started_at), period_seconds * 1_000_000
        begin, end = max(self.counted_to_us, start), round(until * 1_000_000)
        while begin < end:
            index = (begin - start) // period
            stop = min(end, start + (index + 1) * period)
            replica_us, covered_us = self.counted.get(index, (0, 0))
            self.counted[index] = (
                replica_us + self.replicas * (stop - begin),
                covered_us + stop - begin,
            )
            begin = stop

    def replica_seconds(self, index: int, seconds: int) -> float:
        """Replica-seconds of period ``index``, ``seconds`` long: as counted, the seconds no
        observation covered at ``replicas`` (to the millisecond)."""
        replica_us, covered_us = self.counted.get(index, (0, 0))
        length_us = seconds * 1_000_000
        if covered_us > length_us:  # counted past an ended run's last (billed) second
            replica_us, covered_us = replica_us * length_us // covered_us, length_us
        return round((replica_us + (length_us - covered_us) * self.replicas) / 1_000_000, 3)


@dataclass
class Meter:
    endpoint: EndpointResponse
    runs: dict[datetime, Run] = field(default_factory=dict)
    #: The latest runs settled to their end and forgotten (a late copy does not revive one).
    settled: dict[datetime, None] = field(default_factory=dict)

    def has_settled(self, started: datetime) -> bool:
        """Whether this billing settled that run to its end (every period recorded)."""
        run = self.runs.get(started)
        return started in self.settled or (run is not None and run.finished)

    def forget_run(self, started: datetime) -> None:
        """Forget a run settled to its end, remembering that it was."""
        self.runs.pop(started, None)
        self.settled[started] = None
        while len(self.settled) > _SETTLED_KEPT:
            del self.settled[next(iter(self.settled))]


def run_seconds(run: Run) -> int:
    """Billed seconds of an ended run (the controller's rule: rounded up), to its recorded
    stop (``stoppedAt`` as seen in the run), else to when billing last saw it Running."""
    stop: float | None = None
    if run.view.started_at == run.started_at and run.view.stopped_at is not None:
        stop = run.view.stopped_at.timestamp()
    elif run.seen_running_at is not None:
        stop = run.seen_running_at
    ran = 0.0 if stop is None else stop - run.started_at.timestamp()
    return billed_seconds(max(0.0, ran))


def with_placement(seen: EndpointResponse, before: EndpointResponse) -> EndpointResponse:
    """``seen``, on the node and GPUs of ``before`` (the same run seen earlier) when a node
    loss cleared them: the run is billed where it ran."""
    if seen.node is not None or before.node is None:
        return seen
    return seen.model_copy(
        update={
            "node": before.node,
            "gpu_indices": list(before.gpu_indices),
            "placed_vendor": seen.placed_vendor or before.placed_vendor,
        }
    )


async def priced_vendor(prices: PriceSource, endpoint: EndpointResponse) -> str:
    """The vendor a run is priced at: the one asked for, else the placed GPUs', else the
    dearest metering's table prices at its VRAM (the table read only then).

    Raises:
        ServiceError: the table is needed and metering never answered.
    """
    if endpoint.vendor != "any":
        return endpoint.vendor
    if endpoint.placed_vendor:
        return endpoint.placed_vendor
    table = await prices.table()
    priced: list[tuple[int, str]] = []
    for vendor in sorted(table.root):
        try:
            priced.append((held_price(table, vendor=vendor, vram_mb=endpoint.vram_mb), vendor))
        except Unpriced:
            continue
    return max(priced)[1] if priced else "nvidia"


def record_gpu_indices(endpoint: EndpointResponse) -> list[int]:
    """The GPU indices a usage record names: the run's, else ``0..gpu_count - 1``."""
    indices = list(endpoint.gpu_indices)
    if len(indices) != endpoint.gpu_count or len(set(indices)) != len(indices):
        return list(range(endpoint.gpu_count))
    return indices


@dataclass(frozen=True)
class OrphanRun:
    """A run with open holds that no endpoint view names any more (its endpoint deleted,
    or replaced by another gateway's billing): its holds, by period."""

    endpoint_id: str
    started_micros: int
    holds: dict[int, OpenHoldResponse]


def orphaned_runs(
    holds: Iterable[OpenHoldResponse],
    endpoints: Iterable[EndpointResponse],
    followed: Mapping[str, Meter],
    *,
    listed_at: float,
    grace_seconds: float,
) -> list[OrphanRun]:
    """The runs of ``holds`` (listed before ``endpoints``) that are no longer current.

    A run is current while billing follows it unsettled, or its endpoint's view names it
    (``startedAt``) and billing has not settled it to its end; any
    other run's holds are orphaned (for a run settled here: held beyond its recorded stop,
    by a clock ahead of the gateway's or another platform's late view). A run that started
    less than ``grace_seconds`` before ``listed_at`` is left for a later pass (a listing may
    lag the run its hold was placed for).
    """
    named: set[tuple[str, int]] = set()
    for endpoint in endpoints:
        meter, moment = followed.get(endpoint.id), endpoint.started_at
        if moment is None or (meter is not None and meter.has_settled(moment)):
            continue  # a run settled to its end here has no period left to hold
        named.add((endpoint.id, run_micros(moment)))
    for endpoint_id, meter in followed.items():
        named.update((endpoint_id, run_micros(s)) for s, r in meter.runs.items() if not r.finished)
    runs: dict[tuple[str, int], dict[int, OpenHoldResponse]] = {}
    for hold in holds:
        parsed = parse_period_key(hold.reference)
        if parsed is None:
            continue
        endpoint_id, started, index = parsed
        if (endpoint_id, started) in named or listed_at - started / 1e6 < grace_seconds:
            continue
        runs.setdefault((endpoint_id, started), {})[index] = hold
    return [OrphanRun(e, s, periods) for (e, s), periods in sorted(runs.items())]
