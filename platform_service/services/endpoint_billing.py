"""Endpoint billing: every running second paid for, per replica and GPU share, exactly once.

The platform runs it (``install_billing``: a task of its loop, every
``PLATFORM_ENDPOINT_BILLING_INTERVAL_SECONDS``), reading the endpoints and stopping them
through the gateway's endpoint API (``over_gateway_api``); several platforms may run it at
once (every write below is keyed, see the rules).

An endpoint runs in *runs* (Running from ``started_at`` to ``stopped_at``); each run is cut
into billing *periods* of ``period_seconds`` counted from its start. Period ``j`` of the run
that started at ``S`` has its own credit hold, placed with the reference
``ep:{endpoint id}:{S in microseconds}:{j}`` (its *period key*), and is settled by one usage
record with metering under that reference: metering keeps one record per hold reference
and credit_service settles a reference once, so a period is charged once whatever is sent
again (the money moves once, in credit_service's settlement).

The rules, applied on every pass (``interval_seconds``) to the endpoints last observed:

1. While Running in period ``c``: the holds of ``c`` and ``c + 1`` are in place (the hold
   renews one period ahead). A hold the owner cannot pay (402) stops the endpoint through
   the gateway with reason ``OutOfCredits``: it never runs a period it has no hold for.
2. Every period of the run that has ended is recorded: ``period_seconds`` x replicas
   (ready replicas when it closed, at least 1, at most ``max_replicas``) GPU-seconds of
   ``gpu_count`` GPUs at the price of ``vendor`` and ``vram_mb`` (the GPU share).
3. A run that ended (Stopped, Failed) records its last, partial period (the run's seconds
   rounded up, the controller's billing rule) and releases the hold placed ahead. The run
   ends at its recorded stop: ``stoppedAt``, or, for a run a redeploy (a wake) replaced
   before billing saw it end, the ``previousStoppedAt`` the gateway wrote; only a run
   older than that is billed to the last time billing saw it Running.

Each run is billed with the endpoint as billing last saw it in that run (its own spec,
node, replicas and GPUs' vendor), never with a later run's. An endpoint asking for vendor
``any`` is priced at the vendor of the GPUs it was placed on (``placed_vendor``, the
gateway's ``status.vendor``); only when that is unknown at the dearest vendor's price.

A hold covers ``period_seconds`` x ``max_replicas`` x ``gpu_count`` at that price
(``services/holds.endpoint_hold_amount``, the deploy check's rule too); metering caps a
charge at its hold. Nothing is kept but in memory: after a restart, a run's first
unrecorded period is found by asking metering for the records of its periods, newest
first, so a restart mid-period records every period ended meanwhile and none twice. An
endpoint stopped for idleness keeps its run's last period settled and places the next
run's holds when it wakes. A deploy that replaces an ended endpoint of the same name
settles its last run first (:meth:`EndpointBilling.settle_replaced`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from fastapi import FastAPI

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.credit import operations as credit_ops
from gridweave_clients.errors import (
    Conflict,
    NotFound,
    PaymentRequired,
    ServiceError,
)
from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.gateway import endpoints as gateway_ops
from gridweave_clients.gateway.endpoints import EndpointResponse, StopEndpointRequest
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering import operations as metering_ops
from gridweave_clients.metering.models import RecordUsageRequest
from gridweave_clients.metering.pricing import PriceTable
from gridweave_controller.billing import billed_seconds
from gridweave_controller.phases import EndpointPhase, EndpointStopReason
from gridweave_controller.vendors import GpuVendor
from gridweave_runtime.errors import InvalidRequest
from platform_service.services.holds import endpoint_hold_amount, hold_amount

__all__ = [
    "EndpointBilling",
    "ListEndpoints",
    "StopEndpoint",
    "install_billing",
    "over_gateway_api",
    "period_key",
]

_log = logging.getLogger(__name__)

#: Stops an endpoint: ``(endpoint_id, reason, message)``.
StopEndpoint = Callable[[str, str, str], Awaitable[object]]
#: The current endpoints (the gateway's informer cache, or its API).
ListEndpoints = Callable[[], Awaitable[Iterable[EndpointResponse]]]
_ENDED = frozenset({EndpointPhase.STOPPED, EndpointPhase.FAILED})
_SETTLED_KEPT = 8


def over_gateway_api(gateway: AsyncGatewayClient) -> tuple[ListEndpoints, StopEndpoint]:
    """Listing and stopping through the gateway's HTTP API (billing outside the gateway)."""

    async def list_endpoints() -> Iterable[EndpointResponse]:
        return (await gateway.run(gateway_ops.list_endpoints())).endpoints

    async def stop(endpoint_id: str, reason: str, message: str) -> EndpointResponse:
        request = StopEndpointRequest(reason=reason, message=message[:1024])
        return await gateway.run(gateway_ops.stop_endpoint(endpoint_id, request))

    return list_endpoints, stop


def period_key(endpoint_id: str, started_at: datetime, index: int) -> str:
    """The reference of the hold (and the usage record) of one billing period of a run."""
    return f"ep:{endpoint_id}:{round(started_at.timestamp() * 1_000_000)}:{index}"


@dataclass
class _Run:
    """What billing knows of one run: the endpoint as last seen in it, how far it is
    recorded and held."""

    started_at: datetime
    view: EndpointResponse
    seen_running_at: float | None = None  # the clock when last seen Running
    next_period: int | None = None  # the first period not recorded; None: not looked up yet
    held: set[int] = field(default_factory=set)  # the periods whose hold is in place
    replicas: int = 1
    out_of_credits: bool = False
    finished: bool = False


@dataclass
class _Meter:
    endpoint: EndpointResponse
    runs: dict[datetime, _Run] = field(default_factory=dict)
    #: The latest runs settled to their end and forgotten (a late copy does not revive one).
    settled: dict[datetime, None] = field(default_factory=dict)

    def forget_run(self, started: datetime) -> None:
        """Forget a run settled to its end, remembering that it was."""
        self.runs.pop(started, None)
        self.settled[started] = None
        while len(self.settled) > _SETTLED_KEPT:
            del self.settled[next(iter(self.settled))]


def _previous_run(endpoint: EndpointResponse) -> EndpointResponse | None:
    """The run a redeploy replaced, as it ended (from ``previous*``); None: none recorded."""
    if endpoint.previous_started_at is None or endpoint.previous_stopped_at is None:
        return None
    return endpoint.model_copy(
        update={
            "phase": EndpointPhase.STOPPED,
            "started_at": endpoint.previous_started_at,
            "stopped_at": endpoint.previous_stopped_at,
            "placed_vendor": endpoint.previous_vendor,
            "ready_replicas": 0,
        }
    )


class EndpointBilling:
    """Holds and settles the running time of the endpoints it observes (see the module)."""

    def __init__(
        self,
        credit: AsyncCreditClient,
        metering: AsyncMeteringClient,
        *,
        prices: PriceTable,
        stop: StopEndpoint,
        period_seconds: int = 60,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if period_seconds < 1:
            raise ValueError("period_seconds must be at least 1")
        self.credit = credit
        self.metering = metering
        self.prices = prices
        self.period_seconds = period_seconds
        self._stop = stop
        self._clock = clock
        self._meters: dict[str, _Meter] = {}

    # -- what the gateway delivers --------------------------------------------------------

    def observe(self, endpoint: EndpointResponse) -> None:
        """The endpoint as it is now (an informer's add or update)."""
        meter = self._meters.setdefault(endpoint.id, _Meter(endpoint))
        meter.endpoint = endpoint
        previous, replaced = _previous_run(endpoint), endpoint.previous_started_at
        if previous is not None and replaced is not None:
            if replaced not in meter.runs and replaced not in meter.settled:
                # a run replaced while billing did not look (down, or restarted): settled
                # to its recorded stop; periods recorded before are found at metering
                meter.runs[replaced] = _Run(replaced, previous)
        started = endpoint.started_at
        if started is None or started in meter.settled:
            return
        run = meter.runs.setdefault(started, _Run(started, endpoint))
        run.view = endpoint
        if endpoint.phase is EndpointPhase.RUNNING:
            run.seen_running_at = self._clock()
        if endpoint.ready_replicas > 0:
            run.replicas = min(endpoint.ready_replicas, max(1, endpoint.max_replicas))

    async def run(self, list_endpoints: ListEndpoints, *, interval_seconds: float = 5.0) -> None:
        """Observe the listed endpoints and settle, every ``interval_seconds``, until cancelled."""
        while True:
            try:
                for endpoint in await list_endpoints():
                    self.observe(endpoint)
                await self.settle()
            except ServiceError as exc:  # the gateway unreachable: the next pass again
                _log.warning("endpoint billing pass failed: %s", exc)
            except Exception:  # every pass is tried again; nothing is lost by waiting
                _log.exception("endpoint billing pass failed")
            await asyncio.sleep(interval_seconds)

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
        """Settle every run of an ended endpoint whose object a deploy of its name is about
        to replace (the new object has the same id, and none of this one's times)."""
        self.observe(endpoint)
        meter = self._meters[endpoint.id]
        now = self._clock()
        for run in list(meter.runs.values()):
            if not run.finished:
                await self._settle_run(endpoint, run, now)
        for started in list(meter.runs):
            meter.forget_run(started)

    async def _settle_run(self, current_view: EndpointResponse, run: _Run, now: float) -> None:
        current = current_view.started_at == run.started_at
        # the run billed as it was (a later run's spec, node or vendor never applies)
        endpoint = current_view if current else run.view
        running = current and endpoint.phase is EndpointPhase.RUNNING
        start = run.started_at.timestamp()
        if running:
            ran = max(0.0, now - start)
            closed = int(ran // self.period_seconds)  # periods fully ended
            total = None
        else:
            total = self._run_seconds(current_view, run)
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
            await self._release(endpoint, run, index)
        run.finished = True

    def _run_seconds(self, current_view: EndpointResponse, run: _Run) -> int:
        """Billed seconds of an ended run (the controller's rule: rounded up), to its
        recorded stop: ``stoppedAt`` as seen in the run, else the ``previousStoppedAt`` of
        the redeploy that replaced it, else (replaced twice unseen) when last seen Running."""
        stop: float | None = None
        if run.view.started_at == run.started_at and run.view.stopped_at is not None:
            stop = run.view.stopped_at.timestamp()
        elif (
            current_view.previous_started_at == run.started_at
            and current_view.previous_stopped_at is not None
        ):
            stop = current_view.previous_stopped_at.timestamp()
        elif run.seen_running_at is not None:
            stop = run.seen_running_at
        ran = 0.0 if stop is None else stop - run.started_at.timestamp()
        return billed_seconds(max(0.0, ran))

    # -- money ----------------------------------------------------------------------------

    def _vendor(self, endpoint: EndpointResponse) -> str:
        """The vendor priced: the one asked for, else the placed GPUs', else the dearest."""
        if endpoint.vendor != "any":
            return endpoint.vendor
        return endpoint.placed_vendor or self._dearest_vendor(endpoint)

    def _dearest_vendor(self, endpoint: EndpointResponse) -> str:
        priced: list[tuple[int, str]] = []
        for vendor in sorted(self.prices.root):
            try:
                price = hold_amount(
                    self.prices,
                    vendor=vendor,
                    vram_mb=endpoint.vram_mb,
                    gpu_count=1,
                    timeout_seconds=1,
                )
            except InvalidRequest:
                continue
            priced.append((price, vendor))
        return max(priced)[1] if priced else "nvidia"

    def _hold_amount(self, endpoint: EndpointResponse) -> int:
        try:
            return endpoint_hold_amount(
                self.prices,
                vendor=self._vendor(endpoint),
                vram_mb=endpoint.vram_mb,
                gpu_count=endpoint.gpu_count,
                max_replicas=endpoint.max_replicas,
                period_seconds=self.period_seconds,
            )
        except InvalidRequest:  # a vendor or VRAM the table does not price: free, held 1
            return 1

    async def _ensure_hold(self, endpoint: EndpointResponse, run: _Run, index: int) -> bool:
        """The hold of period ``index`` (replay-safe); False: the owner is short (stopped)."""
        if index in run.held:
            return True
        reference = period_key(endpoint.id, run.started_at, index)
        operation = credit_ops.place_hold(
            endpoint.billing_owner,
            amount=self._hold_amount(endpoint),
            idempotency_key=f"endpoint-hold:{reference}",
            reference=reference,
        )
        try:
            await self.credit.run(operation)
        except (PaymentRequired, NotFound) as exc:
            await self._out_of_credits(endpoint, run, exc)
            return False
        except Conflict as exc:
            if exc.code not in ("idempotency_conflict", "reference_in_use"):
                raise
            # placed before for another amount (the endpoint's spec changed), or by another
            # platform's loop under its own key: it stands
        run.held.add(index)
        return True

    async def _out_of_credits(
        self, endpoint: EndpointResponse, run: _Run, exc: ServiceError
    ) -> None:
        if run.out_of_credits:
            return
        available = exc.details.get("available") if isinstance(exc, PaymentRequired) else 0
        message = (
            f"the owner {endpoint.billing_owner} cannot pay the next billing period "
            f"({self._hold_amount(endpoint)} micro-credits; {available or 0} available)"
        )
        _log.info("endpoint %s stopped: %s", endpoint.id, message)
        await self._stop(endpoint.id, EndpointStopReason.OUT_OF_CREDITS, message)
        run.out_of_credits = True

    async def _first_unrecorded(self, endpoint: EndpointResponse, run: _Run, closed: int) -> int:
        """The first period of the run metering has no record of (newest first)."""
        index = closed
        while index > 0:
            reference = period_key(endpoint.id, run.started_at, index - 1)
            page = await self.metering.run(
                metering_ops.list_usage(endpoint.user_id, hold_reference=reference, limit=1)
            )
            if page.records:
                break
            index -= 1
        return index

    async def _record(
        self, endpoint: EndpointResponse, run: _Run, index: int, seconds: int
    ) -> None:
        """One period's usage to metering, which settles its hold."""
        reference = period_key(endpoint.id, run.started_at, index)
        indices = list(endpoint.gpu_indices)
        if len(indices) != endpoint.gpu_count or len(set(indices)) != len(indices):
            indices = list(range(endpoint.gpu_count))
        period_start = run.started_at.timestamp() + index * self.period_seconds
        request = RecordUsageRequest(
            endpoint_id=endpoint.id,
            hold_reference=reference,
            user_id=endpoint.user_id,
            owner_id=endpoint.billing_owner,
            node=endpoint.node or "unknown",
            gpu_indices=indices,
            vram_mb=endpoint.vram_mb,
            vendor=cast(GpuVendor, self._vendor(endpoint)),
            gpu_count=endpoint.gpu_count,
            wall_seconds=float(seconds * max(1, run.replicas)),
            started_at=datetime.fromtimestamp(period_start, tz=run.started_at.tzinfo),
            finished_at=datetime.fromtimestamp(period_start + seconds, tz=run.started_at.tzinfo),
        )
        try:
            await self.metering.run(metering_ops.record_usage(request))
        except Conflict as exc:
            # recorded before with other figures (replicas seen otherwise before a restart):
            # the first record stands, and it alone settled the hold
            _log.info("endpoint %s period %d recorded before: %s", endpoint.id, index, exc)

    async def _release(self, endpoint: EndpointResponse, run: _Run, index: int) -> None:
        """Give back a hold placed ahead for a period the run never reached (once)."""
        reference = period_key(endpoint.id, run.started_at, index)
        operation = credit_ops.settle(reference=reference, user_id=endpoint.billing_owner, amount=0)
        try:
            await self.credit.run(operation)
        except (NotFound, Conflict):
            pass  # never placed, or settled before

    def forget(self, endpoint_id: str) -> None:
        """Stop following a deleted endpoint (its runs must be settled: see :meth:`pending`)."""
        self._meters.pop(endpoint_id, None)

    def pending(self) -> int:
        """Runs not settled to their end yet."""
        return sum(1 for m in self._meters.values() for r in m.runs.values() if not r.finished)


def install_billing(
    app: FastAPI,
    billing: EndpointBilling,
    list_endpoints: ListEndpoints,
    *,
    interval_seconds: float,
) -> None:
    """Run ``billing`` every ``interval_seconds`` while ``app`` serves (a task of its loop)."""
    inner_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(wrapped: FastAPI) -> AsyncIterator[None]:
        async with inner_lifespan(wrapped):
            task = asyncio.create_task(
                billing.run(list_endpoints, interval_seconds=interval_seconds),
                name="endpoint-billing",
            )
            try:
                yield
            finally:
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task

    app.router.lifespan_context = lifespan
