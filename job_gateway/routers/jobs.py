"""``/v1/jobs``: submit, read, list, cancel, and where a job's outcome is.

Every route is the platform's and admins'; reading one job (``reads``) is metering's too:
its hold sweeper asks whether a hold's job ended without a GPU.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from gridweave_clients.fields import UserId, UtcDatetime
from gridweave_clients.gateway.models import (
    MAX_WAIT_SECONDS,
    JobId,
    JobListResponse,
    JobResponse,
    JobResultResponse,
    SubmitJobRequest,
)
from gridweave_controller.phases import JobPhase
from gridweave_runtime.auth import callable_by
from gridweave_runtime.clients import state_dependency
from gridweave_runtime.errors import InvalidRequest
from job_gateway.gateway import Gateway
from job_gateway.services import jobs

__all__ = ["reads", "router"]

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], dependencies=callable_by("platform", "admin"))
reads = APIRouter(
    prefix="/v1/jobs", tags=["jobs"], dependencies=callable_by("platform", "admin", "metering")
)
CurrentGateway = Annotated[Gateway, Depends(state_dependency("gateway", Gateway))]
WaitQuery = Annotated[
    float,
    Query(
        ge=0,
        le=MAX_WAIT_SECONDS,
        description="Seconds to wait for the job to finish before answering (long poll).",
    ),
]


@router.post("", status_code=201)
async def submit_job(body: SubmitJobRequest, gateway: CurrentGateway) -> JobResponse:
    """Create the job in Pending (422 when no GPU could ever hold it, 409 for a taken id, 429
    past the user's quota)."""
    job = await jobs.submit_job(
        crd=gateway.crd, scheduler=gateway.scheduler, request=body, quotas=gateway.quotas
    )
    return jobs.job_response(job)


@router.get("")
async def list_jobs(
    gateway: CurrentGateway,
    user_id: Annotated[UserId | None, Query()] = None,
    phase: Annotated[JobPhase | None, Query()] = None,
    limit: Annotated[
        int | None, Query(ge=1, le=500, description="One page (needs user_id), newest first.")
    ] = None,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
    phases: Annotated[
        str | None, Query(max_length=200, description="Comma-separated phases (with limit).")
    ] = None,
    created_after: Annotated[UtcDatetime | None, Query()] = None,
    created_before: Annotated[UtcDatetime | None, Query()] = None,
    first_map_workers: Annotated[
        bool, Query(description="Only each map's worker 0: one job per map (with limit).")
    ] = False,
) -> JobListResponse:
    """A user's jobs (or everyone's), optionally in one phase, oldest first; with ``limit``,
    one page of a user's jobs, newest first, read from the informer's cache (no apiserver
    list: a dashboard's poll over 10,000 jobs stays cheap)."""
    if limit is None:
        found = await jobs.list_jobs(crd=gateway.crd, user_id=user_id, phase=phase)
        return JobListResponse(jobs=[jobs.job_response(job) for job in found])
    if user_id is None:
        raise InvalidRequest("user_id", "a page of jobs is one user's: give user_id")
    wanted: list[JobPhase] = [phase] if phase is not None else []
    for name in (phases or "").split(","):
        if name:
            try:
                wanted.append(JobPhase(name))
            except ValueError as exc:
                raise InvalidRequest("phases", f"not a job phase: {name!r}") from exc
    page = jobs.page_jobs(
        gateway.jobs.list(),
        user_id=user_id,
        phases=wanted,
        created_after=created_after,
        created_before=created_before,
        limit=limit,
        cursor=cursor,
        first_map_workers=first_map_workers,
    )
    return JobListResponse(
        jobs=[jobs.job_response(job) for job in page.jobs],
        total=page.total,
        next_cursor=page.next_cursor,
    )


@reads.get("/{job_id}")
async def get_job(job_id: JobId, gateway: CurrentGateway, wait: WaitQuery = 0) -> JobResponse:
    """One job; with ``wait``, answered as soon as it finishes (or when the wait runs out)."""
    job = await jobs.wait_for_job(
        crd=gateway.crd,
        waiters=gateway.finish_waiters,
        job_id=job_id,
        wait_s=wait,
        informed=gateway.jobs.get,
    )
    return jobs.job_response(job)


@router.post("/{job_id}/cancel")
async def cancel_job(job_id: JobId, gateway: CurrentGateway) -> JobResponse:
    """Cancel a job that has not finished; a running one is killed (409 once finished)."""
    job = await jobs.cancel_job(crd=gateway.crd, job_id=job_id, now=datetime.now(UTC))
    return jobs.job_response(job)


@router.get("/{job_id}/result")
async def get_job_result(
    job_id: JobId, gateway: CurrentGateway, wait: WaitQuery = 0
) -> JobResultResponse:
    """Where the job's result, traceback and output are (object storage URIs); with
    ``wait``, answered as soon as the job finishes."""
    job = await jobs.wait_for_job(
        crd=gateway.crd,
        waiters=gateway.finish_waiters,
        job_id=job_id,
        wait_s=wait,
        informed=gateway.jobs.get,
    )
    return jobs.job_result(job, gateway.store)
