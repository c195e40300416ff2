"""One page of a user's jobs: newest first, filtered by phase and creation time.

The dashboard asks for one page at a time (``limit``) and walks on with the opaque
``cursor`` the page answers (``gridweave_clients.job_pages``): the position after its last
job, so a job submitted meanwhile neither repeats nor skips a row. The gateway cuts the page
from its informer's cache, so only the page crosses either hop.
"""

from __future__ import annotations

from datetime import datetime

from gridweave_clients.gateway import operations as gw_ops
from gridweave_clients.platform.models import JobListResponse
from gridweave_controller.phases import JobPhase
from platform_service.services.downstream import as_user, downstream_errors
from platform_service.services.jobs import JobServices, job_response

__all__ = ["list_job_page"]


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
    jobs matching the filters) and the next page's cursor (None on the last page); a cursor
    that is not one is a 422 naming ``cursor`` (from the gateway)."""
    operation = gw_ops.list_job_page(
        user_id,
        limit=limit,
        cursor=cursor,
        phases=phases,
        created_after=created_after,
        created_before=created_before,
    )
    with downstream_errors("job_gateway"):
        page = await services.gateway.run(as_user(operation, user_id))
    return JobListResponse(
        jobs=[job_response(job, conditions=False) for job in page.jobs if job.user_id == user_id],
        total=page.total,
        next_cursor=page.next_cursor,
    )
