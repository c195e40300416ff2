"""The holds no settlement will close, closed by their owner: a task of metering's loop.

Metering owns every credit hold. A job's (reference: the job id; a map's workers are jobs)
is closed by the gateway's report when the job ends: settled by its usage record, or, for
a job that never held a GPU, released. Two kinds of job hold would stay open otherwise:

- a job that ended without a GPU whose report never arrives (metering unreachable from the
  gateway for long, the job deleted while the gateway was down);
- a job the gateway never created (a refused submission whose release failed while
  metering was unreachable; a lost answer): the platform's release was only logged.

Each pass lists the open job holds at credit_service. A hold is left alone until it has
been open ``grace_seconds`` since a pass first saw it: its job's own report closes it in
that time, and a submission in flight holds before it creates its job. Then its job is read
from the gateway: a job in a terminal phase that never held a GPU (no node, nothing billed)
gets its whole hold back (its reference settled for 0, exactly once:
:func:`metering_service.services.holds.release`), and so does a job the gateway does not
know. A job that ran, or still may, is left to its usage report. A failed release stays
open and the next pass tries it again. A pass handles up to ``max_parallel`` holds at once.

Holds younger than the grace cost a pass nothing but their listing: the gateway is read
only for the holds the grace has passed (before, every open hold's job was read on every
pass, a gateway call each a minute for every job placed, however new). The passes keep no
state a restart needs: a restarted metering waits out the grace again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.credit import operations as credit_ops
from gridweave_clients.credit.models import OpenHoldResponse
from gridweave_clients.errors import NotFound, ServiceError
from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.gateway import operations as gateway_ops
from gridweave_controller.phases import JOB_TERMINAL_PHASES
from metering_service.errors import MeteringError
from metering_service.services.holds import release

__all__ = ["JOB_HOLD_PREFIX", "MAX_PARALLEL", "HoldSweeper"]

_log = logging.getLogger(__name__)

#: The reference prefix of every job's hold (a job id: ``job-`` and hex).
JOB_HOLD_PREFIX = "job-"
#: Holds a pass reads and closes at once (a gateway read, then a release, each).
MAX_PARALLEL = 16


class HoldSweeper:
    """Closes the job holds no settlement will close (see the module); one pass a call."""

    def __init__(
        self,
        credit: AsyncCreditClient,
        gateway: AsyncGatewayClient,
        *,
        grace_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        max_parallel: int = MAX_PARALLEL,
    ) -> None:
        self.credit = credit
        self.gateway = gateway
        self.grace_seconds = grace_seconds
        self._clock = clock
        self._parallel = asyncio.Semaphore(max_parallel)
        #: hold reference -> when a pass first found it open
        self._first_seen: dict[str, float] = {}

    async def sweep(self) -> list[str]:
        """One pass, up to ``max_parallel`` holds at a time; the references whose holds it
        released, in the order of the open holds."""
        holds = await self._open_holds()
        now = self._clock()
        self._first_seen = {
            hold.reference: self._first_seen.get(hold.reference, now) for hold in holds
        }
        grace = self.grace_seconds
        due = [hold for hold in holds if now - self._first_seen[hold.reference] >= grace]
        closed = await asyncio.gather(*(self._sweep_one(hold) for hold in due))
        return [hold.reference for hold, released in zip(due, closed, strict=True) if released]

    async def run(self, *, interval_seconds: float) -> None:
        """A pass every ``interval_seconds`` until cancelled; a failed pass is logged."""
        while True:
            try:
                released = await self.sweep()
                if released:
                    _log.info("released the holds of %d ended jobs: %s", len(released), released)
            except ServiceError:
                _log.warning("the hold sweep failed; retried next pass", exc_info=True)
            await asyncio.sleep(interval_seconds)

    async def _sweep_one(self, hold: OpenHoldResponse) -> bool:
        """Close ``hold`` if its job ended without a GPU or is unknown."""
        async with self._parallel:
            try:
                closes = await self._closes(hold)
            except ServiceError:  # the gateway unreachable: the next pass asks again
                _log.warning("hold %s: its job could not be read", hold.hold_id, exc_info=True)
                return False
            if not closes:
                return False
            try:
                await release(self.credit, user_id=hold.user_id, reference=hold.reference)
            except MeteringError:  # credit_service away: the next pass releases it
                _log.warning("hold %s was not released", hold.hold_id, exc_info=True)
                return False
            return True

    async def _closes(self, hold: OpenHoldResponse) -> bool:
        """Whether ``hold``'s job ended without a GPU or is unknown (past the grace)."""
        try:
            job = await self.gateway.run(gateway_ops.get_job(hold.reference))
        except NotFound:
            return True
        if job.user_id != hold.user_id:
            return True  # not this hold's job: none of the gateway's is
        # no node and nothing billed: it never held a GPU (a lost attempt's seconds are
        # billed by the gateway's usage report, on the lost attempt's GPUs)
        return job.phase in JOB_TERMINAL_PHASES and job.node is None and not job.billed_seconds

    async def _open_holds(self) -> list[OpenHoldResponse]:
        holds: list[OpenHoldResponse] = []
        after: int | None = None
        while True:
            page = await self.credit.run(
                credit_ops.list_open_holds(JOB_HOLD_PREFIX, limit=1000, after_id=after)
            )
            holds.extend(page.holds)
            if page.next_after_id is None:
                return holds
            after = page.next_after_id
