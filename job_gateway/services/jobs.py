"""Submit, read, list and cancel jobs: the rules behind ``/v1/jobs``.

Every check runs before the GridweaveJob is created, so a refused request creates nothing.
The CRD store is the only state: reads go to it (never to the informer's cache, which may
lag a write this gateway just made).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from gridweave_clients.gateway.models import (
    JobConditionResponse,
    JobResponse,
    JobResultResponse,
    SubmitJobRequest,
)
from gridweave_clients.job_pages import EPOCH, CursorInvalid, decode_cursor, encode_cursor
from gridweave_clients.maps import MapShareModel
from gridweave_controller.errors import (
    AlreadyExists,
    Conflict,
    CrdError,
    CRDNotInstalled,
    Invalid,
    InvalidTransition,
    NotFound,
    TransportError,
)
from gridweave_controller.models import Job
from gridweave_controller.operations import AsyncClientBase
from gridweave_controller.phases import JOB_TERMINAL_PHASES, JobPhase
from gridweave_runtime.errors import InvalidRequest
from gridweave_runtime.storage import ObjectStore, attempt_objects
from job_gateway.errors import ClusterUnavailable, JobAlreadyExists, JobFinished, JobNotFound
from job_gateway.finish_waiters import FinishWaiters
from job_gateway.quotas import Holding, QuotaBook, admitted
from job_gateway.scheduler import Impossible, PlacementRequest, Scheduler

__all__ = [
    "JobPage",
    "page_jobs",
    "cancel_job",
    "get_job",
    "impossible_field",
    "job_response",
    "job_result",
    "list_jobs",
    "submit_job",
]

_CANCEL_MESSAGE = "cancelled on request"


@contextmanager
def crd_errors(job_id: str | None = None) -> Iterator[None]:
    """The controller's errors as the gateway's own (mapped to HTTP once, in the app)."""
    try:
        yield
    except (CRDNotInstalled, TransportError) as exc:
        raise ClusterUnavailable(detail=str(exc)) from exc
    except NotFound as exc:
        raise JobNotFound(job_id=job_id) from exc
    except AlreadyExists as exc:
        raise JobAlreadyExists(job_id=job_id) from exc
    except InvalidTransition as exc:
        raise JobFinished(job_id=job_id, detail=str(exc)) from exc
    except Invalid as exc:
        raise InvalidRequest(exc.field or "body", str(exc)) from exc
    except Conflict as exc:
        raise JobFinished(job_id=job_id, detail=str(exc)) from exc
    except CrdError as exc:  # anything else the store said: not the caller's fault
        raise ClusterUnavailable(detail=str(exc)) from exc


def impossible_field(impossible: Impossible) -> str:
    """The field at fault: ``vendor`` or ``gpu_models`` (no such GPU), ``vram_mb`` (too
    large), ``gpu_count``, ``cpu_millis`` or ``memory_mb`` (no node with such GPUs has it)."""
    return impossible.field


async def submit_job(
    *,
    crd: AsyncClientBase,
    scheduler: Scheduler,
    request: SubmitJobRequest,
    quotas: QuotaBook | None = None,
) -> Job:
    """Create the job in Pending; 422 when no GPU of the inventory could ever hold it, 429
    when it would take its user past ``request.quota`` (a map's worker: the whole map)."""
    if request.hold_reference not in (None, request.job_id):
        # metering keeps one usage record per hold, and a job's hold is its job id
        raise InvalidRequest("hold_reference", "a job's credit hold is placed with its job id")
    asked = PlacementRequest(
        name=request.job_id,
        vram_mb=request.vram_mb,
        gpu_count=request.gpu_count,
        vendor=request.vendor,
        priority=request.priority,
        cpu_millis=request.cpu_millis or 0,
        memory_mb=request.memory_mb or 0,
        gpu_models=tuple(request.gpu_models or ()),
    )
    impossible = scheduler.check(asked)
    if impossible is not None:
        raise InvalidRequest(impossible_field(impossible), impossible.message)
    holding = Holding(request.gpu_count, request.vram_mb * request.gpu_count)
    share = request.map
    async with admitted(
        quotas,
        user_id=request.user_id,
        quota=request.quota,
        kind="job",
        name=request.job_id,
        holding=holding,
        asked=None if share is None else holding.times(share.workers),
        map_id=None if share is None else share.map_id,
    ):
        return await _create_job(crd, request)


async def _create_job(crd: AsyncClientBase, request: SubmitJobRequest) -> Job:
    with crd_errors(request.job_id):
        return await crd.create_job(
            request.job_id,
            request.user_id,
            request.function_ref,
            vram_mb=request.vram_mb,
            gpu_count=request.gpu_count,
            vendor=request.vendor,
            owner=request.owner,
            timeout_seconds=request.timeout_seconds,
            max_retries=request.max_retries,
            args_ref=request.args_ref,
            priority=request.priority,
            function_name=request.function_name,
            memory_mb=request.memory_mb,
            cpu_millis=request.cpu_millis,
            gpu_models=request.gpu_models,
            image=request.image,
            pip=request.pip,
            map_share=None if request.map is None else request.map.model_dump(),
        )


async def get_job(*, crd: AsyncClientBase, job_id: str) -> Job:
    """One job, read from the store."""
    with crd_errors(job_id):
        return await crd.get_job(job_id)


async def wait_for_job(
    *,
    crd: AsyncClientBase,
    waiters: FinishWaiters,
    job_id: str,
    wait_s: float,
    informed: Callable[[str], Job | None] | None = None,
) -> Job:
    """The job once it has finished, or as it is when ``wait_s`` runs out (0: at once).

    A finish seen by the informer answers with the informer's copy (no second read); a
    deletion reads the job again, which answers 404. A wait starts from the informer's copy
    (``informed``) when it has the job: its finish wakes the waiter registered first, so
    nothing is missed, and the store is read only when the wait runs out.
    """
    with waiters.waiting(job_id) as waiter:
        copy = None if wait_s <= 0 or informed is None else informed(job_id)
        job = copy or await get_job(crd=crd, job_id=job_id)
        if wait_s <= 0 or job.phase in JOB_TERMINAL_PHASES:
            return job
        try:
            async with asyncio.timeout(wait_s):
                await waiter.done.wait()
        except TimeoutError:
            return job if copy is None else await get_job(crd=crd, job_id=job_id)
    return waiter.job or await get_job(crd=crd, job_id=job_id)


async def list_jobs(
    *, crd: AsyncClientBase, user_id: str | None, phase: JobPhase | None
) -> list[Job]:
    """A user's jobs (``spec.userId``), or everyone's, optionally in one phase; oldest first."""
    with crd_errors():
        jobs = await crd.list_jobs(user_id=user_id)
    if phase is not None:
        jobs = [job for job in jobs if job.phase is phase]
    epoch = datetime.min.replace(tzinfo=UTC)
    return sorted(jobs, key=lambda job: (job.metadata.creation_timestamp or epoch, job.name))


@dataclass(frozen=True)
class JobPage:
    """One page of jobs, newest first, the count matching, and the next page's cursor."""

    jobs: list[Job]
    total: int
    next_cursor: str | None


def page_jobs(
    jobs: Iterable[Job],
    *,
    user_id: str,
    phases: Collection[JobPhase],
    created_after: datetime | None,
    created_before: datetime | None,
    limit: int,
    cursor: str | None,
    first_map_workers: bool = False,
) -> JobPage:
    """Up to ``limit`` of the user's jobs after ``cursor``, newest first (pure: the caller
    passes the informer's jobs, so a page costs no apiserver list); ``first_map_workers``:
    only each map's worker 0, one job per map (the platform's pages of maps)."""
    after = None
    if cursor is not None:
        try:
            after = decode_cursor(cursor)
        except CursorInvalid as exc:
            raise InvalidRequest("cursor", "not a cursor this API answered") from exc

    def position(job: Job) -> tuple[datetime, str]:
        return (job.metadata.creation_timestamp or EPOCH, job.name)

    matching = sorted(
        (
            job
            for job in jobs
            if job.spec.user_id == user_id
            and (not first_map_workers or (job.spec.map is not None and job.spec.map.worker == 0))
            and (not phases or job.phase in phases)
            and (created_after is None or position(job)[0] >= created_after)
            and (created_before is None or position(job)[0] < created_before)
        ),
        key=position,
        reverse=True,
    )
    remaining = [job for job in matching if after is None or position(job) < after]
    page = remaining[:limit]
    more = len(remaining) > limit and bool(page)
    next_cursor = encode_cursor(*position(page[-1])) if more else None
    return JobPage(jobs=page, total=len(matching), next_cursor=next_cursor)


async def cancel_job(*, crd: AsyncClientBase, job_id: str, now: datetime) -> Job:
    """Cancel a job that has not finished; a cancelled one is answered as it is.

    A running job is billed up to now (from ``startedAt``); the executor sees the Cancelled
    job through the informer and kills its process.
    """
    with crd_errors(job_id):
        job = await crd.get_job(job_id)
        if job.phase is JobPhase.CANCELLED:
            return job
        if job.phase in JOB_TERMINAL_PHASES:
            raise JobFinished(job_id=job_id, phase=job.phase.value)
        started = job.status.started_at
        wall = None
        if job.phase is JobPhase.RUNNING and started is not None:
            wall = max(0.0, (now - started).total_seconds())
        return await crd.set_job_cancelled(job_id, message=_CANCEL_MESSAGE, wall_seconds=wall)


def job_result(job: Job, store: ObjectStore) -> JobResultResponse:
    """Where the job's outcome is, named from its CRD alone (the objects are not read)."""
    status = job.status
    ran = status.node is not None and (
        status.started_at is not None or job.phase in JOB_TERMINAL_PHASES
    )
    objects = attempt_objects(job.name, status.attempts)
    failed = job.phase is JobPhase.FAILED and status.reason == "Exception"
    return JobResultResponse(
        job_id=job.name,
        phase=job.phase,
        finished=job.phase in JOB_TERMINAL_PHASES,
        reason=status.reason,
        message=status.message,
        wall_seconds=status.wall_seconds,
        result_ref=status.result_ref,
        result_sha256=status.result_sha256,
        error_ref=store.uri(objects.error) if failed else None,
        stdout_ref=store.uri(objects.stdout) if ran else None,
        stderr_ref=store.uri(objects.stderr) if ran else None,
    )


def job_response(job: Job) -> JobResponse:
    """The API's view of a GridweaveJob."""
    spec, status = job.spec, job.status
    return JobResponse(
        job_id=job.name,
        user_id=spec.user_id,
        owner=job.billing_owner,
        function_ref=spec.function_ref,
        args_ref=spec.args_ref,
        function_name=spec.function_name,
        vram_mb=spec.vram_mb,
        gpu_count=spec.gpu_count,
        vendor=spec.vendor,
        timeout_seconds=spec.timeout_seconds,
        max_retries=spec.max_retries,
        memory_mb=spec.memory_mb,
        cpu_millis=spec.cpu_millis,
        gpu_models=list(spec.gpu_models) if spec.gpu_models else None,
        image=spec.image,
        pip=list(spec.pip) if spec.pip else None,
        map=None if spec.map is None else MapShareModel(**spec.map.model_dump()),
        priority=spec.priority,
        hold_reference=job.name,
        phase=job.phase,
        node=status.node,
        gpu_indices=list(status.gpu_indices),
        attempts=status.attempts,
        reason=status.reason,
        message=status.message,
        created_at=job.metadata.creation_timestamp,
        allocated_at=status.allocated_at,
        started_at=status.started_at,
        finished_at=status.finished_at,
        wall_seconds=status.wall_seconds,
        billed_seconds=status.billed_seconds,
        result_ref=status.result_ref,
        result_sha256=status.result_sha256,
        conditions=[
            JobConditionResponse(
                type=condition.type,
                status=condition.status.value,
                reason=condition.reason,
                message=condition.message,
                last_transition_time=condition.last_transition_time,
            )
            for condition in status.conditions
        ],
    )
