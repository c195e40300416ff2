"""The scheduling loop: Pending jobs onto node + GPUs, written back as Allocated.

Endpoints waiting to be deployed (Pending, or Stopped and woken through the API) are placed
by the same passes and written back as Deploying. A Pending endpoint a pass cannot place
gets why written (``set_endpoint_waiting``), again whenever the reason or its message
changes: the scheduler's own where it says more (``Decision.unplaced``: ``RealGpuBusy``, a
vllm endpoint whose real GPUs are full, the message saying whether simulated ones have
room), else ``WaitingForGpu`` with the VRAM it waits for, unless the endpoint carries a
reason of its own that says more (``NodeLost``: its node was lost and it is placed again). A woken
endpoint stays Stopped until placed, so nothing is written on it: why it waits is kept in
memory (:meth:`SchedulingLoop.why_waking`) and answered with its view by this gateway.
Placing an endpoint that ran (woken, or after a node loss) replaces its run in the status:
that run is settled first (:meth:`SchedulingLoop.settle_before_placing`), and an endpoint
whose run cannot be settled now waits for a later pass.

The loop keeps no state that matters across a restart: the waiting jobs and the allocation
map are what the informer last delivered (a restart lists the CRDs again and rebuilds both).
Its only memory is the aging reservations (a restart begins their bound again, see
docs/architecture.md) and the provisional holds of writes in flight.

One pass: rank the waiting jobs and place what fits (:class:`Scheduler`), put each placement
in the allocation map as a provisional hold, then write Allocated through the CRD client,
``max_parallel_writes`` at a time. A write that fails releases its hold (unless the informer
has already replaced it with what the store holds); the job stays Pending and the next pass
tries again. Passes run whenever a change arrives and at least every ``pass_interval``
seconds (aging needs time to pass).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gridweave_controller.errors import CrdError
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.operations import AsyncClientBase
from gridweave_controller.phases import EndpointPhase, JobPhase
from job_gateway.execution.devices import placed_vendor
from job_gateway.scheduler import (
    REAL_GPU_BUSY,
    AllocationKey,
    AllocationMap,
    Decision,
    Placement,
    PlacementRequest,
    Reservation,
    Scheduler,
    Unplaced,
)

__all__ = ["WAITING_FOR_GPU", "PassReport", "SchedulingLoop", "no_room_now"]

_log = logging.getLogger(__name__)

#: The reason of a waiting endpoint where the scheduler says no more than "no room now".
WAITING_FOR_GPU = "WaitingForGpu"


def no_room_now(request: PlacementRequest) -> Unplaced:
    """Why a request waits when no GPU that could take it has room now."""
    gpus = f"{request.gpu_count} GPUs of one node" if request.gpu_count > 1 else "a GPU"
    return Unplaced(
        WAITING_FOR_GPU,
        f"waiting for {gpus} with {request.vram_mb} MiB free ({request.vendor}): "
        "every one that fits is taken now",
    )


@dataclass(frozen=True, slots=True)
class PassReport:
    """What one pass did: the decision, the placements written, the writes that failed."""

    decision: Decision
    written: int
    failed: int
    seconds: float


PassListener = Callable[[PassReport], None]
#: Settles the last run of an endpoint about to be placed again; False: not now.
SettleRun = Callable[[Endpoint], Awaitable[bool]]


class SchedulingLoop:
    """Waiting jobs (fed by the informer) placed pass after pass."""

    def __init__(
        self,
        crd: AsyncClientBase,
        scheduler: Scheduler,
        *,
        pass_interval: float,
        max_parallel_writes: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.crd = crd
        self.scheduler = scheduler
        self.allocations: AllocationMap = scheduler.allocations
        self.pass_interval = pass_interval
        self._writes = asyncio.Semaphore(max_parallel_writes)
        self._clock = clock
        self._waiting: dict[str, PlacementRequest] = {}
        #: The informer's copy of each waiting job: its write needs no read while current.
        self._copies: dict[str, Job] = {}
        self._reservations: dict[AllocationKey, Reservation] = {}
        #: Endpoints waiting for a placement: Pending ones, and Stopped ones being woken.
        self._endpoints: dict[str, PlacementRequest] = {}
        #: The informer's copy of each waiting endpoint: the reason it carries (one the loop
        #: did not write, NodeLost, is kept over its "no room now") and its last run (settled
        #: before placing).
        self._endpoint_copies: dict[str, Endpoint] = {}
        self._settle_run: SettleRun | None = None
        self._woken: set[str] = set()
        #: The reason last written on each waiting endpoint (written again only when it changes).
        self._told: dict[str, Unplaced] = {}
        #: Why each woken endpoint still waits, as of the last pass (nothing is written: it
        #: stays Stopped until placed; the API answers it with the endpoint's view).
        self._waking: dict[str, Unplaced] = {}
        self._wake = asyncio.Event()
        self._listeners: list[PassListener] = []
        self._allocated: list[Callable[[Job], None]] = []

    # -- what the informer delivers -------------------------------------------------------

    def follow(self, job: Job) -> None:
        """An added or updated job: waiting while Pending, else not."""
        if job.phase is JobPhase.PENDING:
            self._copies[job.name] = job
            if job.name not in self._waiting:
                self._waiting[job.name] = PlacementRequest.from_job(job)
                self._wake.set()
        else:
            self.forget(job.name)

    def forget(self, name: str) -> None:
        """A deleted job (or one no longer waiting)."""
        self._waiting.pop(name, None)
        self._copies.pop(name, None)
        self._reservations.pop(("job", name), None)

    def follow_endpoint(self, endpoint: Endpoint) -> None:
        """An added or updated endpoint: waiting while Pending, or Stopped and woken."""
        name, phase = endpoint.name, endpoint.phase
        if phase is EndpointPhase.PENDING or (
            phase is EndpointPhase.STOPPED and name in self._woken
        ):
            self._endpoint_copies[name] = endpoint
            if name not in self._endpoints:
                self._endpoints[name] = PlacementRequest.from_endpoint(endpoint)
                self._wake.set()
            return
        if phase is EndpointPhase.FAILED:
            self._woken.discard(name)
        # a wake is answered by its placement's write (an older copy may still arrive)
        self._stop_waiting(name)

    def wake_endpoint(self, endpoint: Endpoint) -> None:
        """Place a Stopped endpoint again (any number of wakes: one placement)."""
        self._woken.add(endpoint.name)
        self.follow_endpoint(endpoint)

    def forget_endpoint(self, name: str) -> None:
        """A deleted endpoint."""
        self._woken.discard(name)
        self._stop_waiting(name)

    def _stop_waiting(self, name: str) -> None:
        self._endpoints.pop(name, None)
        self._endpoint_copies.pop(name, None)
        self._told.pop(name, None)
        self._reservations.pop(("endpoint", name), None)

    def why_waking(self, name: str) -> Unplaced | None:
        """Why a woken endpoint is not placed yet, as of the last pass; None: not woken,
        placed, or no pass has looked at it yet."""
        return self._waking.get(name) if name in self._woken else None

    def poke(self) -> None:
        """Run a pass soon (something freed VRAM, or the inventory changed)."""
        self._wake.set()

    # -- reads ------------------------------------------------------------------------------

    def waiting(self) -> list[PlacementRequest]:
        """The jobs waiting for a placement (provisionally held ones included)."""
        return list(self._waiting.values())

    def on_allocated(self, listener: Callable[[Job], None]) -> None:
        """Call ``listener`` with each job this loop allocated, as the write answered it
        (before the informer brings it back: the executor launches it at once)."""
        self._allocated.append(listener)

    def settle_before_placing(self, settle: SettleRun) -> None:
        """Settle an endpoint's last run with ``settle`` before placing it again (billing):
        an endpoint it answers False for is not placed in this pass."""
        self._settle_run = settle

    def on_pass(self, listener: PassListener) -> None:
        """Call ``listener`` with every pass's report (metrics)."""
        self._listeners.append(listener)

    # -- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Pass after pass until cancelled."""
        while True:
            try:
                async with asyncio.timeout(self.pass_interval):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.run_pass()
            except Exception:  # a pass must never end the loop; the next one starts over
                _log.exception("scheduling pass failed")

    async def run_pass(self) -> PassReport:
        """One pass: decide, hold provisionally, write every placement."""
        started = time.perf_counter()
        decision = self.scheduler.schedule(
            [*self._waiting.values(), *self._endpoints.values()],
            now=self._clock(),
            reservations=self._reservations,
        )
        self._reservations = dict(decision.reservations)
        for placement in decision.placements:
            self.allocations.put(placement.allocation())
        whys = {
            request.name: why
            for request in decision.waiting
            if request.kind == "endpoint" and (why := self._why_waiting(request, decision))
        }
        # a woken endpoint is Stopped: its reason (the stop's) stays, why it waits is answered
        self._waking = {name: why for name, why in whys.items() if name in self._woken}
        tells = [
            self._tell(name, why)
            for name, why in whys.items()
            if name not in self._woken and self._told.get(name) != why
        ]
        results, _ = await asyncio.gather(
            asyncio.gather(*(self._write(p) for p in decision.placements)),
            asyncio.gather(*tells),
        )
        written = sum(results)
        report = PassReport(
            decision, written, len(results) - written, time.perf_counter() - started
        )
        for listener in self._listeners:
            listener(report)
        return report

    def _why_waiting(self, request: PlacementRequest, decision: Decision) -> Unplaced | None:
        """Why a waiting endpoint waits: the scheduler's reason, else "no room now" unless
        its own reason says more (NodeLost: its node was lost, it is placed again)."""
        why = decision.unplaced.get(request.key)
        if why is not None or request.name in self._woken:
            return why or no_room_now(request)
        copy = self._endpoint_copies.get(request.name)
        if copy is not None and copy.status.reason not in (None, WAITING_FOR_GPU, REAL_GPU_BUSY):
            return None
        return no_room_now(request)

    async def _write(self, placement: Placement) -> bool:
        async with self._writes:
            try:
                name = placement.request.name
                if placement.request.kind == "endpoint":
                    if not await self._run_settled(name):
                        self._release(placement)
                        return False
                    vendor = placed_vendor(
                        self.scheduler.inventory, placement.node, placement.gpu_indices
                    )
                    # decided on a Pending endpoint (or a woken Stopped one): never applied
                    # to one stopped meanwhile
                    await self.crd.set_endpoint_deploying(
                        name,
                        placement.node,
                        list(placement.gpu_indices),
                        vendor,
                        from_phase=(
                            EndpointPhase.STOPPED if name in self._woken else EndpointPhase.PENDING
                        ),
                    )
                    self._woken.discard(name)
                else:
                    job = await self.crd.set_job_allocated(
                        name,
                        placement.node,
                        list(placement.gpu_indices),
                        known=self._copies.get(name),
                    )
                    for listener in self._allocated:
                        listener(job)
            except CrdError as error:
                self._release(placement)
                _log.info("allocating %s failed: %s", placement.request.name, error)
                return False
            except BaseException:
                self._release(placement)
                raise
        return True

    async def _run_settled(self, name: str) -> bool:
        """Whether the endpoint's last run (if it ran) is billed to its end."""
        copy = self._endpoint_copies.get(name)
        if self._settle_run is None or copy is None or copy.status.started_at is None:
            return True
        return await self._settle_run(copy)

    async def _tell(self, name: str, why: Unplaced) -> None:
        async with self._writes:
            try:
                await self.crd.set_endpoint_waiting(name, why.reason, why.message)
            except CrdError as error:  # placed or stopped meanwhile: nothing to say
                _log.info("writing why %s waits failed: %s", name, error)
                return
        if name in self._endpoints:
            self._told[name] = why

    def _release(self, placement: Placement) -> None:
        held = self.allocations.get(placement.key)
        if held is not None and held.provisional and held == placement.allocation():
            self.allocations.remove(placement.key)
            self._wake.set()  # the VRAM is free again
