"""``/v1/jobs``: submit, read, list, cancel the caller's jobs; their result and output."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Response

from gridweave_clients.credit.models import IdempotencyKey
from gridweave_clients.gateway.models import MAX_WAIT_SECONDS, JobId
from gridweave_clients.platform.models import (
    IDEMPOTENCY_HEADER,
    JobListResponse,
    JobLogsResponse,
    JobResponse,
    SubmitJobRequest,
)
from gridweave_controller.phases import JobPhase
from gridweave_runtime.responses import mark_replayed
from platform_service.routers.common import JobServicesDep, SettingsDep, UserDep
from platform_service.services import jobs, outcomes

__all__ = ["PICKLE_MEDIA_TYPE", "router"]

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])
#: The result's media type: the SDK's pickled bytes, handed over unread.
PICKLE_MEDIA_TYPE = "application/vnd.gridweave.pickle"
Offset = Annotated[int, Query(ge=0, le=2**62, description="Byte offset to read from.")]


@router.post("", status_code=201)
async def submit_job(
    body: SubmitJobRequest,
    user: UserDep,
    services: JobServicesDep,
    response: Response,
    idempotency_key: Annotated[
        IdempotencyKey | None,
        Header(
            alias=IDEMPOTENCY_HEADER,
            description="A retry with the same key answers the same job (200), no new one.",
        ),
    ] = None,
) -> JobResponse:
    """Hold price x timeout x GPUs, store the function, submit (402 short, 422 no such GPU)."""
    submitted = await jobs.submit_job(
        services, user_id=user.user_id, request=body, idempotency_key=idempotency_key
    )
    if submitted.replayed:
        response.status_code = 200
    mark_replayed(response, submitted.replayed)
    return submitted.job


@router.get("")
async def list_jobs(
    user: UserDep,
    services: JobServicesDep,
    phase: Annotated[JobPhase | None, Query()] = None,
) -> JobListResponse:
    """The caller's jobs, oldest first, optionally in one phase."""
    return await jobs.list_jobs(services, user_id=user.user_id, phase=phase)


@router.get("/{job_id}")
async def get_job(job_id: JobId, user: UserDep, services: JobServicesDep) -> JobResponse:
    """One of the caller's jobs (another user's is 404)."""
    return jobs.job_response(await jobs.get_own_job(services, user_id=user.user_id, job_id=job_id))


@router.post("/{job_id}/cancel")
async def cancel_job(job_id: JobId, user: UserDep, services: JobServicesDep) -> JobResponse:
    """Cancel a job that has not finished; a running one is stopped and billed to now."""
    return await jobs.cancel_job(services, user_id=user.user_id, job_id=job_id)


@router.get(
    "/{job_id}/result",
    response_class=Response,
    responses={200: {"content": {PICKLE_MEDIA_TYPE: {}}, "description": "The pickled value."}},
)
async def get_job_result(
    job_id: JobId,
    user: UserDep,
    services: JobServicesDep,
    wait: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_WAIT_SECONDS,
            description="Seconds to wait for the job to finish before answering (long poll).",
        ),
    ] = 0,
) -> Response:
    """The pickled return value (409 ``job_not_finished``, or ``job_did_not_complete`` with
    the remote traceback); with ``wait``, answered as soon as the job finishes."""
    data = await outcomes.job_result(services, user_id=user.user_id, job_id=job_id, wait_s=wait)
    return Response(data, media_type=PICKLE_MEDIA_TYPE)


@router.get("/{job_id}/logs")
async def get_job_logs(
    job_id: JobId,
    user: UserDep,
    services: JobServicesDep,
    settings: SettingsDep,
    stdout_offset: Offset = 0,
    stderr_offset: Offset = 0,
) -> JobLogsResponse:
    """stdout and stderr of the latest attempt from the offsets given (pass back the ones
    answered to follow)."""
    return await outcomes.job_logs(
        services,
        user_id=user.user_id,
        job_id=job_id,
        stdout_offset=stdout_offset,
        stderr_offset=stderr_offset,
        limit=settings.max_log_bytes,
    )
