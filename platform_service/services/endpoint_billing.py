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
   rounded up, the controller's billing rule) and releases the hold placed ahead.

A hold covers ``period_seconds`` x ``max_replicas`` x ``gpu_count`` at the dearest price
the endpoint may run at; metering caps a charge at its hold. Nothing is kept but in
memory: after a restart, a run's first unrecorded period is found by asking metering for
the records of its periods, newest first, so a restart mid-period records every period
ended meanwhile and none twice. An endpoint stopped for idleness keeps its run's last
period settled and places the next run's holds when it wakes.
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
from gridweave_clients.metering.pricing import (
    PriceTable,
    UnknownVendor,
    VramBeyondPriceTable,
    price_per_gpu_second,
)
from gridweave_controller.billing import billed_seconds
from gridweave_controller.phases import EndpointPhase
from gridweave_controller.vendors import GpuVendor

__all__ = [
    "OUT_OF_CREDITS",
    "EndpointBilling",
    "ListEndpoints",
    "StopEndpoint",
    "install_billing",
    "over_gateway_api",
    "period_key",
]

_log = logging.getLogger(__name__)

#: The reason an endpoint is stopped with when its owner cannot pay its next period.
OUT_OF_CREDITS = "OutOfCredits"
#: Stops an endpoint: ``(endpoint_id, reason, message)``.
StopEndpoint = Callable[[str, str, str], Awaitable[object]]
#: The vendor of an endpoint's GPUs when it asked for any (the inventory's); None: unknown.
VendorOf = Callable[[EndpointResponse], str | None]
#: The current endpoints (the gateway's informer cache, or its API).
ListEndpoints = Callable[[], Awaitable[Iterable[EndpointResponse]]]
_ENDED = frozenset({EndpointPhase.STOPPED, EndpointPhase.FAILED})


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
    """What billing knows of one run: how far it is recorded and held."""

    started_at: datetime
    next_period: int | None = None  # the first period not recorded; None: not looked up yet
    held: set[int] = field(default_factory=set)  # the periods whose hold is in place
    replicas: int = 1
    out_of_credits: bool = False
    finished: bool = False


@dataclass
class _Meter:
    endpoint: EndpointResponse
    runs: dict[datetime, _Run] = field(default_factory=dict)


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
        vendor_of: VendorOf | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if period_seconds < 1:
            raise ValueError("period_seconds must be at least 1")
        self.credit = credit
        self.metering = metering
        self.prices = prices
        self.period_seconds = period_seconds
        self._stop = stop
        self._vendor_of = vendor_of
        self._clock = clock
        self._meters: dict[str, _Meter] = {}

    # -- what the gateway delivers --------------------------------------------------------

    def observe(self, endpoint: EndpointResponse) -> None:
        """The endpoint as it is now (an informer's add or update)."""
        meter = self._meters.setdefault(endpoint.id, _Meter(endpoint))
        meter.endpoint = endpoint
        started = endpoint.started_at
        if started is not None and started not in meter.runs:
            meter.runs[started] = _Run(started)
        run = meter.runs.get(started) if started is not None else None
        if run is not None and endpoint.ready_replicas > 0:
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
                    del meter.runs[started]

    async def _settle_run(self, endpoint: EndpointResponse, run: _Run, now: float) -> None:
        current = endpoint.started_at == run.started_at
        running = current and endpoint.phase is EndpointPhase.RUNNING
        start = run.started_at.timestamp()
        if running:
            ran = max(0.0, now - start)
            closed = int(ran // self.period_seconds)  # periods fully ended
            total = None
        else:
            total = self._run_seconds(endpoint, run, current, now)
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

    def _run_seconds(self, endpoint: EndpointResponse, run: _Run, current: bool, now: float) -> int:
        """Billed seconds of an ended run (the controller's rule: rounded up)."""
        if current and endpoint.stopped_at is not None:
            return billed_seconds(max(0.0, (endpoint.stopped_at - run.started_at).total_seconds()))
        # replaced by a redeploy (its stop time cleared): billed to when it was last seen
        return billed_seconds(max(0.0, now - run.started_at.timestamp()))

    # -- money ----------------------------------------------------------------------------

    def _vendor(self, endpoint: EndpointResponse) -> str:
        if endpoint.vendor != "any":
            return endpoint.vendor
        known = self._vendor_of(endpoint) if self._vendor_of is not None else None
        return known or self._dearest_vendor(endpoint)

    def _dearest_vendor(self, endpoint: EndpointResponse) -> str:
        priced: list[tuple[int, str]] = []
        for vendor in sorted(self.prices.root):
            try:
                priced.append(
                    (
                        price_per_gpu_second(self.prices, vendor=vendor, vram_mb=endpoint.vram_mb),
                        vendor,
                    )
                )
            except (UnknownVendor, VramBeyondPriceTable):
                continue
        return max(priced)[1] if priced else "nvidia"

    def _hold_amount(self, endpoint: EndpointResponse) -> int:
        vendor = endpoint.vendor if endpoint.vendor != "any" else self._dearest_vendor(endpoint)
        try:
            price = price_per_gpu_second(self.prices, vendor=vendor, vram_mb=endpoint.vram_mb)
        except (UnknownVendor, VramBeyondPriceTable):
            price = 0
        replicas = max(1, endpoint.max_replicas)
        # a free price still holds 1: the settlement needs a hold to close
        return max(1, price * self.period_seconds * endpoint.gpu_count * replicas)

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
        await self._stop(endpoint.id, OUT_OF_CREDITS, message)
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
