"""One page of a user's jobs: newest first, filtered by phase and creation time.

The dashboard asks for one page at a time (``limit``) and walks on with the opaque
``cursor`` the page answers: the position after its last job, (created_at, job_id), so a
job submitted meanwhile neither repeats nor skips a row. Only the page crosses the wire.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime

from gridweave_clients.platform.models import JobListResponse, JobResponse
from gridweave_controller.phases import JobPhase
from gridweave_runtime.errors import InvalidRequest
from platform_service.services.jobs import JobServices, list_jobs

__all__ = ["decode_cursor", "encode_cursor", "list_job_page"]

_EPOCH = datetime.fromtimestamp(0, UTC)


def _position(job: JobResponse) -> tuple[datetime, str]:
    return (job.created_at or _EPOCH, job.job_id)


def encode_cursor(job: JobResponse) -> str:
    """The cursor of the position right after ``job``."""
    created_at, job_id = _position(job)
    return base64.urlsafe_b64encode(f"{created_at.isoformat()}|{job_id}".encode()).decode()


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The position a cursor names; 422 naming ``cursor`` when it is not one of ours."""
    try:
        created, _, job_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        position = datetime.fromisoformat(created)
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise InvalidRequest("cursor", "not a cursor this API answered") from exc
    if not job_id or position.tzinfo is None:
        raise InvalidRequest("cursor", "not a cursor this API answered")
    return position, job_id


async def list_job_page(
    services: JobServices,
    *,
    user_id: str,
    phases: list[JobPhase],
    created_after: datetime | None,
    created_before: datetime | None,
    limit: int,
    cursor: str | None,
) -> JobListResponse:
    """Up to ``limit`` of the user's jobs after ``cursor``, newest first, with ``total`` (the
    jobs matching the filters) and the next page's cursor (None on the last page)."""
    after = decode_cursor(cursor) if cursor is not None else None
    listed = await list_jobs(
        services, user_id=user_id, phase=phases[0] if len(phases) == 1 else None
    )
    wanted = set(phases)
    matching = sorted(
        (
            job
            for job in listed.jobs
            if (not wanted or job.phase in wanted)
            and (created_after is None or (job.created_at or _EPOCH) >= created_after)
            and (created_before is None or (job.created_at or _EPOCH) < created_before)
        ),
        key=_position,
        reverse=True,
    )
    remaining = [job for job in matching if after is None or _position(job) < after]
    page = remaining[:limit]
    more = len(remaining) > limit
    return JobListResponse(
        jobs=page,
        total=len(matching),
        next_cursor=encode_cursor(page[-1]) if more and page else None,
    )
