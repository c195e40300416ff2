"""Endpoint billing: every running second paid for, per replica and GPU share, exactly once;
the gateway reports each billing period of every run to metering, which holds, settles and
releases (what a run was: ``runs``).

The gateway runs it (``Gateway``: fed by its endpoint informer, a pass on start, then every
``GATEWAY_ENDPOINT_BILLING_INTERVAL_SECONDS``), stopping an endpoint its owner can no
longer pay for with its own stop; several gateways may run it at once (every write is
keyed). A run (Running from ``started_at``) is cut into *periods* of ``period_seconds``;
period ``j`` has its own credit hold, referenced by its *period key*
(``ep:{endpoint id}:{start in microseconds}:{j}``, ``endpoint_periods.period_key``),
placed by metering at its own price when the gateway asks for that period
(``/v1/endpoint-holds``), and settled by one usage record under that reference: metering
keeps one record per reference and credit_service settles a reference once, so money for a
period moves once whatever is sent again. Rules per pass:

1. While Running in period ``c``: the holds of ``c`` and ``c + 1`` are in place. A hold the
   owner cannot pay (402) stops the endpoint with reason ``OutOfCredits``; one that would
   pass the owner's spending cap (402 ``spending_limit``), with reason ``SpendingLimit``.
2. Every ended period is recorded: its replica-seconds (the ready replicas, 1 to
   ``max_replicas``, counted between billing's observations; a stretch no two observations
   cover, at the replicas last seen: ``Run.count_replicas``) of ``gpu_count`` GPUs at the
   price of ``vendor`` (for ``any``: the placed GPUs' ``placed_vendor``, else the dearest)
   and ``vram_mb``.
3. An ended run records its last, partial period (seconds rounded up) and releases the hold
   placed ahead. It ends at ``stoppedAt`` (a node loss: on the node and GPUs it ran on, as
   billing saw it before), else when billing last saw it Running.
4. A run is settled before anything replaces it in the endpoint's status: the scheduling
   loop's placement of an endpoint that ran (woken, or placed again after a node loss) and
   a deploy over an ended endpoint of the same name call :meth:`EndpointBilling.settle_replaced`
   first, and write nothing while metering cannot be reached. So the status keeps no run
   history for billing.
5. An open endpoint hold (listed from metering before the endpoints) whose run no view
   names and billing does not follow (its endpoint deleted) is released: every period
   before it is recorded, and its run's stop is recorded nowhere.

A hold covers ``period_seconds`` x ``max_replicas`` x ``gpu_count`` at that price
(``endpoint_periods.endpoint_hold_amount``, the deploy check's rule). Nothing is kept but
in memory: a restarted billing finds a run's first unrecorded period at metering (newest
first) and the open holds there.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from typing import cast

from gridweave_clients.credit.models import OpenHoldResponse
from gridweave_clients.errors import (
    Conflict,
    NotFound,
    PaymentRequired,
    ServiceError,
)
from gridweave_clients.gateway.endpoints import EndpointResponse
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering import operations as metering_ops
from gridweave_clients.metering.endpoint_periods import period_key, started_from_micros
from gridweave_clients.metering.models import EndpointPeriodHoldRequest, RecordUsageRequest
from gridweave_clients.metering.price_source import PriceSource
from gridweave_controller.phases import EndpointPhase, EndpointStopReason
from gridweave_controller.vendors import GpuVendor, Vendor
from job_gateway.endpoint_billing.runs import (
    Meter,
    OrphanRun,
    Run,
    orphaned_runs,
    priced_vendor,
    record_gpu_indices,
    run_seconds,
    with_placement,
)

__all__ = [
    "EndpointBilling",
    "ListEndpoints",
    "StopEndpoint",
]

_log = logging.getLogger(__name__)

#: Stops an endpoint: ``(endpoint_id, reason, message)``.
StopEndpoint = Callable[[str, str, str], Awaitable[object]]
#: The current endpoints (the gateway's informer cache, or its API).
ListEndpoints = Callable[[], Awaitable[Iterable[EndpointResponse]]]


class EndpointBilling:
    """Holds and settles the running time of the endpoints it observes (see the module)."""

    def __init__(
        self,
        metering: AsyncMeteringClient,
        *,
        prices: PriceSource,
        stop: StopEndpoint,
        period_seconds: int = 60,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if period_seconds < 1:
            raise ValueError("period_seconds must be at least 1")
        self.metering = metering
        self.prices = prices
        self.period_seconds = period_seconds
        self._stop = stop
        self._clock = clock
        self._meters: dict[str, Meter] = {}

    # -- what the gateway delivers --------------------------------------------------------

    def observe(self, endpoint: EndpointResponse) -> None:
        """The endpoint as it is now (an informer's add or update)."""
        meter = self._meters.setdefault(endpoint.id, Meter(endpoint))
        meter.endpoint = endpoint
        started = endpoint.started_at
        if started is None or started in meter.settled:
            return
        run = meter.runs.setdefault(started, Run(started, endpoint))
        run.view = with_placement(endpoint, run.view)
        now = self._clock()
        if endpoint.phase is EndpointPhase.RUNNING:
            run.count_replicas(now, self.period_seconds)  # at the replicas seen before
            run.seen_running_at = now
            run.counted_to_us = round(now * 1_000_000)
        elif run.counted_to_us is not None:  # ended since: counted to its recorded stop
            if endpoint.stopped_at is not None:
                run.count_replicas(min(now, endpoint.stopped_at.timestamp()), self.period_seconds)
            run.counted_to_us = None
        replicas = endpoint.ready_replicas or endpoint.run_replicas or 0
        if replicas > 0:  # ready now, else last probed in this run
            run.replicas = min(replicas, max(1, endpoint.max_replicas))

    async def run(self, list_endpoints: ListEndpoints, *, interval_seconds: float = 5.0) -> None:
        """One :meth:`billing_pass` now (on start) and every ``interval_seconds``, until
        cancelled."""
        while True:
            try:
                await self.billing_pass(list_endpoints)
            except ServiceError as exc:  # the gateway unreachable: the next pass again
                _log.warning("endpoint billing pass failed: %s", exc)
            except Exception:  # every pass is tried again; nothing is lost by waiting
                _log.exception("endpoint billing pass failed")
            await asyncio.sleep(interval_seconds)

    async def billing_pass(self, list_endpoints: ListEndpoints) -> None:
        """Observe the listed endpoints, settle them, and close the holds of runs no longer
        current. The open holds are read before the endpoints, so each was placed for a run
        that started before the listing: one the listing does not name has ended."""
        try:
            holds = await self._open_holds()
        except ServiceError as exc:  # settling goes on; the holds are looked at next pass
            _log.warning("open endpoint holds not listed: %s", exc)
            holds = []
        listed_at = self._clock()
        endpoints = list(await list_endpoints())
        for endpoint in endpoints:
            self.observe(endpoint)
        await self.settle()
        orphans = orphaned_runs(
            holds,
            endpoints,
            self._meters,
            listed_at=listed_at,
            grace_seconds=self.period_seconds,
        )
        for orphan in orphans:
            await self._settle_orphan(orphan)

    # -- one pass -------------------------------------------------------------------------

    async def settle(self) -> None:
        """One pass: renew the holds of running endpoints, record every ended period."""
        now = self._clock()
        for endpoint_id in list(self._meters):
            meter = self._meters[endpoint_id]
            for run in list(meter.runs.values()):
                if run.finished:
                    continue
                try:
                    await self._settle_run(meter.endpoint, run, now)
                except ServiceError as exc:  # credit or metering down: the next pass again
                    _log.warning("billing endpoint %s: %s", endpoint_id, exc)
            # a finished run that is not the current one is forgotten
            for started, run in list(meter.runs.items()):
                if run.finished and started != meter.endpoint.started_at:
                    meter.forget_run(started)

    async def settle_replaced(self, endpoint: EndpointResponse) -> None:
        """Settle every run of an ended endpoint before something replaces its run in the
        status: a placement of it (woken, or after a node loss), or a deploy of its name
        (a new object: the same id, none of this one's times)."""
        self.observe(endpoint)
        meter = self._meters[endpoint.id]
        now = self._clock()
        for run in list(meter.runs.values()):
            if not run.finished:
                await self._settle_run(endpoint, run, now)
        for started in list(meter.runs):
            meter.forget_run(started)

    async def _settle_orphan(self, orphan: OrphanRun) -> None:
        """Close the open holds of a run no view names any more (its endpoint deleted).

        Its stop is recorded nowhere: it is settled to the best recorded bound, the start
        of its first period still held (every period before it is recorded; a hold is
        placed only once its period, or the one before, has begun), so nothing more is
        charged: every hold left is released, each once (by its period key), but one whose
        period metering recorded, which metering's settlement closes.

        Another platform still following the run may record a period at this moment. Its
        record and this release both settle the period key at credit_service, which claims
        the key and locks the hold in one statement: the first moves the money, the second
        is refused (a release after the capture is ignored here; a record after the
        release stays at metering refused as ``hold_closed``, charged nothing).
        """
        started = started_from_micros(orphan.started_micros)
        meter = self._meters.get(orphan.endpoint_id)
        if meter is not None and started in meter.runs:
            meter.forget_run(started)
        _log.info(
            "endpoint %s: run of %s no longer current; %d hold(s) released",
            orphan.endpoint_id,
            started.isoformat(),
            len(orphan.holds),
        )
        user_id = meter.endpoint.user_id if meter is not None else None
        for _, hold in sorted(orphan.holds.items()):
            # a recorded period is metering's to settle (its settlement may be pending)
            if not await self._recorded(user_id or hold.user_id, hold.reference):
                await self._release(hold.reference, hold.user_id)

    async def _open_holds(self) -> list[OpenHoldResponse]:
        """Every open endpoint hold (all owners), oldest first."""
        holds: list[OpenHoldResponse] = []
        after: int | None = None
        while True:
            page = await self.metering.run(
                metering_ops.list_endpoint_holds(limit=1000, after_id=after)
            )
            holds.extend(page.holds)
            if page.next_after_id is None:
                return holds
            after = page.next_after_id

    async def _settle_run(self, current_view: EndpointResponse, run: Run, now: float) -> None:
        # the run billed as it was seen (a node loss's view: where it ran)
        endpoint = run.view
        running = (
            current_view.started_at == run.started_at and endpoint.phase is EndpointPhase.RUNNING
        )
        owner = endpoint.billing_owner
        start = run.started_at.timestamp()
        if running:
            ran = max(0.0, now - start)
            closed = int(ran // self.period_seconds)  # periods fully ended
            total = None
        else:
            total = run_seconds(run)
            closed = math.ceil(total / self.period_seconds)
        if run.next_period is None:
            run.next_period = await self._first_unrecorded(endpoint, run, closed)
        for index in range(run.next_period, closed):
            seconds = self.period_seconds
            if total is not None and index == closed - 1:
                seconds = total - index * self.period_seconds
            await self._ensure_hold(endpoint, run, index)
            await self._record(endpoint, run, index, seconds)
            run.next_period = index + 1
        if running:
            for index in (closed, closed + 1):  # the period running and the next one
                if not await self._ensure_hold(endpoint, run, index):
                    break
            return
        for index in (closed, closed + 1):  # placed ahead, never run
            await self._release(period_key(endpoint.id, run.started_at, index), owner)
        run.finished = True

    # -- money ----------------------------------------------------------------------------

    async def _vendor(self, endpoint: EndpointResponse) -> str:
        return await priced_vendor(self.prices, endpoint)

    async def _ensure_hold(self, endpoint: EndpointResponse, run: Run, index: int) -> bool:
        """The hold of period ``index`` (replay-safe); False: the owner is short (stopped)."""
        if index in run.held:
            return True
        request = EndpointPeriodHoldRequest(
            endpoint_id=endpoint.id,
            owner_id=endpoint.billing_owner,
            run_started_at=run.started_at,
            period=index,
            period_seconds=self.period_seconds,
            vendor=cast(Vendor, await self._vendor(endpoint)),
            vram_mb=endpoint.vram_mb,
            gpu_count=endpoint.gpu_count,
            max_replicas=max(1, endpoint.max_replicas),
        )
        try:
            await self.metering.run(metering_ops.hold_endpoint_period(request))
        except (PaymentRequired, NotFound) as exc:
            await self._out_of_credits(endpoint, run, exc)
            return False
        except Conflict as exc:
            if exc.code not in ("idempotency_conflict", "reference_in_use"):
                raise
            # placed before for another amount (the endpoint's spec changed): it stands
        run.held.add(index)
        return True

    async def _out_of_credits(
        self, endpoint: EndpointResponse, run: Run, exc: ServiceError
    ) -> None:
        if run.out_of_credits:
            return
        owner = endpoint.billing_owner
        details = exc.details if isinstance(exc, PaymentRequired) else {}
        reason = EndpointStopReason.OUT_OF_CREDITS
        if isinstance(exc, PaymentRequired) and exc.code == "spending_limit":
            reason = EndpointStopReason.SPENDING_LIMIT
            cap = "monthly" if details.get("cap") == "monthly" else "per-job"
            message = (
                f"the next billing period of the owner {owner} ({details.get('asked')} "
                f"micro-credits) would pass their {cap} spending cap of "
                f"{details.get('limit')} micro-credits ({details.get('spent')} spent this month)"
            )
        elif "needed" in details:
            message = (
                f"the owner {owner} cannot pay the next billing period "
                f"({details['needed']} micro-credits; {details.get('available') or 0} available)"
            )
        else:  # no account: nothing to pay from
            message = f"the owner {owner} cannot pay the next billing period (no credits)"
        _log.info("endpoint %s stopped: %s", endpoint.id, message)
        await self._stop(endpoint.id, reason, message)
        run.out_of_credits = True

    async def _first_unrecorded(self, endpoint: EndpointResponse, run: Run, closed: int) -> int:
        """The first period of the run metering has no record of (newest first)."""
        index = closed
        while index > 0:
            reference = period_key(endpoint.id, run.started_at, index - 1)
            if await self._recorded(endpoint.user_id, reference):
                break
            index -= 1
        return index

    async def _recorded(self, user_id: str, reference: str) -> bool:
        """Whether metering has the usage record of that period key."""
        operation = metering_ops.list_usage(user_id, hold_reference=reference, limit=1)
        return bool((await self.metering.run(operation)).records)

    async def _record(self, endpoint: EndpointResponse, run: Run, index: int, seconds: int) -> None:
        """One period's usage to metering, which settles its hold."""
        reference = period_key(endpoint.id, run.started_at, index)
        period_start = run.started_at.timestamp() + index * self.period_seconds
        request = RecordUsageRequest(
            endpoint_id=endpoint.id,
            hold_reference=reference,
            user_id=endpoint.user_id,
            owner_id=endpoint.billing_owner,
            node=endpoint.node or "unknown",
            gpu_indices=record_gpu_indices(endpoint),
            vram_mb=endpoint.vram_mb,
            vendor=cast(GpuVendor, await self._vendor(endpoint)),
            gpu_count=endpoint.gpu_count,
            wall_seconds=run.replica_seconds(index, seconds),
            started_at=datetime.fromtimestamp(period_start, tz=run.started_at.tzinfo),
            finished_at=datetime.fromtimestamp(period_start + seconds, tz=run.started_at.tzinfo),
        )
        try:
            await self.metering.run(metering_ops.record_usage(request))
        except Conflict as exc:
            # recorded before with other figures (replicas seen otherwise before a restart):
            # the first record stands, and it alone settled the hold
            _log.info("endpoint %s period %d recorded before: %s", endpoint.id, index, exc)
        run.counted.pop(index, None)

    async def _release(self, reference: str, owner: str) -> None:
        """Give back the whole hold of a period never run (once: a settlement of its
        reference moves money once). The one way billing closes a hold without a record."""
        try:
            await self.metering.run(metering_ops.release_hold(owner, reference=reference))
        except (NotFound, Conflict):
            pass  # never placed, or settled before

    def forget(self, endpoint_id: str) -> None:
        """Stop following a deleted endpoint (its runs must be settled: see :meth:`pending`)."""
        self._meters.pop(endpoint_id, None)

    def pending(self) -> int:
        """Runs not settled to their end yet."""
        return sum(1 for m in self._meters.values() for r in m.runs.values() if not r.finished)
