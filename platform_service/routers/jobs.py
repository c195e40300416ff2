"""``/v1/jobs``: submit, read, list, cancel the caller's jobs; their result and output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from gridweave_clients.credit.models import IdempotencyKey
from gridweave_clients.fields import UtcDatetime
from gridweave_clients.gateway.models import MAX_WAIT_SECONDS, JobId
from gridweave_clients.platform.models import (
    IDEMPOTENCY_HEADER,
    JobListResponse,
    JobLogsResponse,
    JobResponse,
    SubmitJobRequest,
)
from gridweave_clients.platform.results import RESULT_SHA256_HEADER
from gridweave_controller.phases import JobPhase
from gridweave_runtime.responses import mark_replayed
from platform_service.routers.common import JobServicesDep, QuotaDep, SettingsDep, UserDep
from platform_service.services import job_pages, jobs, outcomes

__all__ = ["PICKLE_MEDIA_TYPE", "router"]

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])
#: The result's media type: the SDK's pickled bytes, handed over unread.
PICKLE_MEDIA_TYPE = "application/vnd.gridweave.pickle"
Offset = Annotated[int, Query(ge=0, le=2**62, description="Byte offset to read from.")]


class _HeldStream(StreamingResponse):
    """A live log stream that gives its user's slot back however it ends (finished, the
    client gone, or never started)."""

    def __init__(
        self,
        events: AsyncIterator[str],
        *,
        headers: dict[str, str],
        slots: outcomes.LogStreamSlots,
        user_id: str,
    ) -> None:
        super().__init__(events, media_type="text/event-stream", headers=headers)
        self._slots = slots
        self._user_id = user_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._slots.give_back(self._user_id)


@router.post("", status_code=201)
async def submit_job(
    body: SubmitJobRequest,
    user: UserDep,
    services: JobServicesDep,
    response: Response,
    quota: QuotaDep,
    idempotency_key: Annotated[
        IdempotencyKey | None,
        Header(
            alias=IDEMPOTENCY_HEADER,
            description="A retry with the same key answers the same job (200), no new one.",
        ),
    ] = None,
) -> JobResponse:
    """Check the image (403, 404), hold price x timeout x GPUs, store the function, submit
    (402 short, 422 no such GPU)."""
    submitted = await jobs.submit_job(
        services, user=user, request=body, idempotency_key=idempotency_key, quota=quota
    )
    if submitted.replayed:
        response.status_code = 200
    mark_replayed(response, submitted.replayed)
    return submitted.job


@router.get("")
async def list_jobs(
    user: UserDep,
    services: JobServicesDep,
    phase: Annotated[
        list[JobPhase] | None, Query(max_length=8, description="Only jobs in these phases.")
    ] = None,
    created_after: Annotated[
        UtcDatetime | None, Query(description="Only jobs created at or after this time.")
    ] = None,
    created_before: Annotated[
        UtcDatetime | None, Query(description="Only jobs created before this time.")
    ] = None,
    limit: Annotated[
        int | None,
        Query(ge=1, le=500, description="One page of this many jobs, newest first."),
    ] = None,
    cursor: Annotated[
        str | None,
        Query(max_length=400, description="The next page: the cursor the last page answered."),
    ] = None,
) -> JobListResponse:
    """The caller's jobs: all, oldest first; or with ``limit``, one page, newest first (its
    ``next_cursor`` asks for the next one); filtered by phase and creation time."""
    phases = phase or []
    if limit is None and cursor is None and created_after is None and created_before is None:
        if len(phases) <= 1:
            return await jobs.list_jobs(
                services, user_id=user.user_id, phase=phases[0] if phases else None
            )
    return await job_pages.list_job_page(
        services,
        user_id=user.user_id,
        phases=phases,
        created_after=created_after,
        created_before=created_before,
        limit=limit or 500,
        cursor=cursor,
    )


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
    """The pickled return value, its SHA-256 (as the job's status records it) in
    ``X-Gridweave-Result-Sha256`` (409 ``job_not_finished``, or ``job_did_not_complete`` with
    the remote traceback); with ``wait``, answered as soon as the job finishes."""
    data, digest = await outcomes.job_result(
        services, user_id=user.user_id, job_id=job_id, wait_s=wait
    )
    headers = {RESULT_SHA256_HEADER: digest} if digest else None
    return Response(data, media_type=PICKLE_MEDIA_TYPE, headers=headers)


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


@router.get(
    "/{job_id}/logs/stream",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "Server-sent events."},
        429: {"description": "The user's live log streams are all open (too_many_log_streams)."},
    },
)
async def stream_job_logs(
    job_id: JobId,
    request: Request,
    user: UserDep,
    services: JobServicesDep,
    settings: SettingsDep,
    last_event_id: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            description="Resume after this event (the browser sends it when it reconnects).",
        ),
    ] = None,
    stdout_offset: Offset = 0,
    stderr_offset: Offset = 0,
) -> StreamingResponse:
    """Live logs as server-sent events (``stdout``, ``stderr``, then ``end``), one line per
    event; each event's id is the position after it, so a reconnection resumes there. A user
    holds at most ``PLATFORM_MAX_LOG_STREAMS_PER_USER`` open (429 ``too_many_log_streams``)."""
    start = (stdout_offset, stderr_offset)
    if last_event_id:
        start = outcomes.parse_log_position(last_event_id, field="Last-Event-ID")
    await jobs.get_own_job(services, user_id=user.user_id, job_id=job_id)  # 404 before 200
    slots: outcomes.LogStreamSlots = request.app.state.log_streams
    slots.take(user.user_id)
    events = outcomes.stream_job_logs(
        services,
        user_id=user.user_id,
        job_id=job_id,
        start=start,
        poll_seconds=settings.log_poll_seconds,
    )
    return _HeldStream(
        events,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        slots=slots,
        user_id=user.user_id,
    )


@router.get(
    "/{job_id}/logs/download",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "The stream, or a page."}},
)
async def download_job_log(
    job_id: JobId,
    user: UserDep,
    services: JobServicesDep,
    stream: Annotated[Literal["stdout", "stderr"], Query()] = "stdout",
    offset: Offset = 0,
    length: Annotated[
        int | None, Query(ge=1, le=2**62, description="At most this many bytes (one page).")
    ] = None,
) -> Response:
    """One output stream of the job's latest attempt as a text file: all of it, or the page
    of ``length`` bytes from ``offset``; ``X-Log-Size`` is the whole stream's size."""
    read = await outcomes.job_log_bytes(
        services, user_id=user.user_id, job_id=job_id, stream=stream, offset=offset, length=length
    )
    return Response(
        read.data,
        media_type="text/plain; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{job_id}.{stream}.txt"',
            "X-Log-Size": str(read.size),
        },
    )
