"""Usage to metering: every finished job is reported, exactly once in effect.

The protocol (docs/architecture.md, "Usage to metering"):

1. The job informer hands every job to :meth:`UsageReporter.follow`; a job is *due* when
   it is in a terminal phase and carries no ``UsageReported`` condition. The first list on
   boot therefore hands over every report a crash left unsent; nothing else is remembered.
2. A due job that held GPUs (a node and GPU indices, or a lost attempt's: ``billed_gpus``)
   is recorded with metering (``POST /v1/usage``, one record per credit hold, the hold
   reference being the job id), then marked on the CRD with
   ``set_job_usage_reported(job_id, usage_id)``. One that never held a GPU (cancelled or
   failed while Pending: no node, no GPU, no second to bill) has
   its hold released by metering (``POST /v1/releases``: its reference settled for 0),
   then is marked with ``set_job_hold_released(job_id)``; a job that had no hold (created
   without the platform) is marked all the same.
3. A crash between 1 and 2 sends the same report again after the restart: metering
   answers it as a replay of the first (same record, same id; the same release), so the
   hold is settled once; the mark then lands. A repeated mark writes nothing.

Reports run ``concurrency`` at a time in tasks of the gateway's loop; a failed attempt
(metering down, hanging past ``timeout``, refusing, the CRD write failing) is tried again
after a jittered backoff doubling up to ``max_backoff`` seconds, and is never dropped.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from pydantic import ValidationError

from gridweave_clients.errors import Conflict as MeteringConflict
from gridweave_clients.errors import NotFound as MeteringNotFound
from gridweave_clients.errors import ServiceError, ServiceRefused
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering.models import RecordUsageRequest
from gridweave_controller.conditions import JOB_USAGE_REPORTED, ConditionStatus
from gridweave_controller.errors import Conflict, CrdError, NotFound
from gridweave_controller.models import Job
from gridweave_controller.operations import AsyncClientBase
from gridweave_controller.phases import JOB_TERMINAL_PHASES
from gridweave_controller.vendors import GpuVendor
from job_gateway.inventory import Gpu
from job_gateway.metrics import GatewayMetrics

__all__ = [
    "ReportPolicy",
    "UsageNotReportable",
    "UsageReporter",
    "billed_gpus",
    "is_due",
    "usage_request",
]

_log = logging.getLogger(__name__)

_TERMINAL = frozenset(phase.value for phase in JOB_TERMINAL_PHASES)
_TRUE = ConditionStatus.TRUE.value
#: The GPU at (node, index) as the inventory knows it now, if it does.
GpuLookup = Callable[[str, int], Gpu | None]


class UsageNotReportable(Exception):
    """The job's usage cannot be described yet (its GPUs' vendor is unknown)."""


@dataclass(frozen=True, slots=True)
class ReportPolicy:
    """How many reports run at once, how long one may take, how failures back off."""

    concurrency: int = 8
    timeout: float = 30.0
    backoff: float = 0.5
    max_backoff: float = 60.0

    def delay(self, failures: int) -> float:
        """Seconds before attempt ``failures + 1``: doubling, capped, jittered 0.5x-1x."""
        ceiling = min(self.max_backoff, self.backoff * 2.0 ** (failures - 1))
        return ceiling * random.uniform(0.5, 1.0)


def is_due(job: Job) -> bool:
    """A finished job whose usage (or, if it never held a GPU, released hold) is not marked.

    Read from the raw status: a boot's first list hands over every job ever finished, and
    parsing each one's status model would cost more than the rest of the check.
    """
    status = job.raw.get("status") or {}
    if status.get("phase") not in _TERMINAL:
        return False
    if status.get("node") and not status.get("gpuIndices"):
        return False  # never written so: a node comes with its GPUs
    for condition in status.get("conditions") or ():
        if condition.get("type") == JOB_USAGE_REPORTED:
            return bool(condition.get("status") != _TRUE)
    return True


def billed_gpus(job: Job) -> tuple[str, tuple[int, ...]]:
    """The node and GPUs a finished job is billed on: its last attempt's, or, when it ended
    before it was placed again after a lost attempt, that lost attempt's.

    Raises:
        ValueError: the job never held a GPU (nothing to bill: its hold is released).
    """
    status = job.status
    if status.node is not None and status.gpu_indices:
        return status.node, status.gpu_indices
    if status.earlier_seconds and status.earlier_node and status.earlier_gpu_indices:
        return status.earlier_node, status.earlier_gpu_indices
    raise ValueError(f"job {job.name} never held a GPU")


def usage_request(job: Job, gpu: Gpu | None) -> RecordUsageRequest:
    """The usage record of a finished job; ``gpu`` is its first GPU in the inventory.

    The vendor and model are the GPU's (one node's GPUs of one job share both); a job asking
    for one vendor has it without the inventory, the model then stays unknown. Wall seconds
    are the status's (a job that ended before running bills none); the result reference
    goes along for the receipt.

    Raises:
        UsageNotReportable: neither the inventory nor the spec says the vendor.
        pydantic.ValidationError: a figure metering could never take.
    """
    status = job.status
    node, gpu_indices = billed_gpus(job)
    vendor: GpuVendor
    if gpu is not None:
        vendor = gpu.vendor
    elif job.spec.vendor != "any":
        vendor = job.spec.vendor
    else:
        raise UsageNotReportable(
            f"job {job.name}: node {node} GPU {gpu_indices[0]} is not in the "
            "inventory and the job asked for any vendor"
        )
    return RecordUsageRequest(
        job_id=job.name,
        hold_reference=job.name,
        user_id=job.spec.user_id,
        owner_id=job.billing_owner,
        node=node,
        gpu_indices=list(gpu_indices),
        vram_mb=job.spec.vram_mb,
        vendor=vendor,
        gpu_count=len(gpu_indices),
        # the last attempt's running time and the earlier, lost attempts' (every second
        # that ran is billed, whatever ended it)
        wall_seconds=(status.wall_seconds or 0.0) + status.earlier_seconds,
        started_at=status.started_at,
        finished_at=status.finished_at,
        gpu_model=None if gpu is None else gpu.model,
        result_ref=status.result_ref,
    )


class UsageReporter:
    """Reports due jobs (fed by the informer) until each is marked on its CRD."""

    def __init__(
        self,
        crd: AsyncClientBase,
        metering: AsyncMeteringClient,
        *,
        lookup_gpu: GpuLookup,
        metrics: GatewayMetrics,
        policy: ReportPolicy | None = None,
    ) -> None:
        self.crd = crd
        self.metering = metering
        self.policy = policy or ReportPolicy()
        self._lookup_gpu = lookup_gpu
        self._metrics = metrics
        #: The latest object of every job whose report is due (queued, running or backing off).
        self._due: dict[str, Job] = {}
        self._failures: dict[str, int] = {}
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._retries: dict[str, asyncio.TimerHandle] = {}

    # -- what the informer delivers -------------------------------------------------------

    def follow(self, job: Job) -> None:
        """An added or updated job: queued when its report is due.

        A deleted job is not forgotten: its report still goes to metering (only the mark
        has nowhere to go).
        """
        if not is_due(job):
            if self._due.pop(job.name, None) is not None:  # marked meanwhile (another gateway)
                self._failures.pop(job.name, None)
                self._update_waiting()
            return
        known = job.name in self._due
        self._due[job.name] = job
        if not known:
            self._queue.put_nowait(job.name)
            self._update_waiting()

    def waiting(self) -> int:
        """The jobs whose report is due."""
        return len(self._due)

    # -- the workers ------------------------------------------------------------------------

    async def run(self) -> None:
        """``policy.concurrency`` workers until cancelled."""
        workers = [
            asyncio.create_task(self._work(), name=f"usage-report-{number}")
            for number in range(self.policy.concurrency)
        ]
        try:
            await asyncio.gather(*workers)
        finally:
            for worker in workers:
                worker.cancel()
            for worker in workers:
                with suppress(asyncio.CancelledError):
                    await worker
            for handle in self._retries.values():
                handle.cancel()
            self._retries.clear()

    async def _work(self) -> None:
        while True:
            name = await self._queue.get()
            job = self._due.get(name)
            if job is None:
                continue  # marked while it waited
            try:
                async with asyncio.timeout(self.policy.timeout):
                    await self._report(job)
            except Exception as error:  # every failure is tried again; see _retry
                self._retry(name, error)
            else:
                self._failures.pop(name, None)
                if self._due.get(name) is job:
                    del self._due[name]
                else:  # a newer object arrived meanwhile: look at it again
                    self._queue.put_nowait(name)
                self._metrics.usage_report_sent()
                self._update_waiting()

    async def _report(self, job: Job) -> None:
        """Record the usage with metering (or release the hold of a job that never held a
        GPU), then mark it on the job."""
        try:
            node, gpu_indices = billed_gpus(job)
        except ValueError:
            await self._release(job)
            return
        request = usage_request(job, self._lookup_gpu(node, gpu_indices[0]))
        record = await self.metering.record_usage(request)
        try:
            await self.crd.set_job_usage_reported(job.name, record.id, known=job)
        except NotFound:
            _log.info("job %s was deleted; its usage is record %d", job.name, record.id)
        except Conflict as conflict:
            # marked with another record (metering keeps one per hold: only if it lost the
            # first), or no longer finished (deleted and created again): keep what is there
            _log.error("job %s not marked with usage record %d: %s", job.name, record.id, conflict)

    async def _release(self, job: Job) -> None:
        """Have metering release the hold of a job that never held a GPU, then mark it."""
        try:
            await self.metering.release_hold(job.billing_owner, reference=job.name)
        except MeteringNotFound:
            _log.info("job %s ended without a GPU and without a credit hold", job.name)
        except MeteringConflict as conflict:
            # its reference was settled for more before: that settlement stands
            _log.error("job %s: its hold was not released: %s", job.name, conflict)
        try:
            await self.crd.set_job_hold_released(job.name, known=job)
        except NotFound:
            _log.info("job %s was deleted; its hold was released", job.name)

    def _retry(self, name: str, error: Exception) -> None:
        failures = self._failures.get(name, 0) + 1
        self._failures[name] = failures
        self._metrics.usage_report_failed()
        delay = self.policy.delay(failures)
        # refused, or never describable as it is: an operator's turn (retried all the same)
        permanent = isinstance(error, ServiceRefused | ValidationError | UsageNotReportable)
        level = logging.ERROR if permanent else logging.WARNING
        _log.log(
            level,
            "reporting the usage of job %s failed (attempt %d; again in %.1f s): %s",
            name,
            failures,
            delay,
            _describe(error),
        )
        self._retries[name] = asyncio.get_running_loop().call_later(delay, self._requeue, name)

    def _requeue(self, name: str) -> None:
        self._retries.pop(name, None)
        if name in self._due:
            self._queue.put_nowait(name)

    def _update_waiting(self) -> None:
        self._metrics.set_usage_reports_waiting(len(self._due))


def _describe(error: Exception) -> str:
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, ServiceError | CrdError | UsageNotReportable | ValidationError):
        return str(error)
    return repr(error)
