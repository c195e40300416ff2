"""``/v1/admin/users/{user_id}/limits``: a user's quotas and fair-share weight (admins), and
the quota every submission of the caller carries to the gateway."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, Path
from starlette.concurrency import run_in_threadpool

from gridweave_clients.platform.user_limits import UserLimitsRequest, UserLimitsResponse
from gridweave_runtime.clients import state_dependency
from platform_service.errors import PlatformError
from platform_service.routers.common import AdminDep, SessionDep
from platform_service.services import user_limits
from platform_service.services.user_limits import SharesSync

__all__ = ["router"]

router = APIRouter(tags=["users"])
_log = logging.getLogger(__name__)

UserIdPath = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._-]+$")]
SharesSyncDep = Annotated[SharesSync, Depends(state_dependency("shares_sync", SharesSync))]


@router.get("/v1/admin/users/{user_id}/limits")
def get_user_limits(
    user_id: UserIdPath, _admin: AdminDep, session: SessionDep
) -> UserLimitsResponse:
    """A user's quotas (null: no limit) and share weight (admins only)."""
    return user_limits.get_user_limits(session, user_id)


@router.put("/v1/admin/users/{user_id}/limits")
async def set_user_limits(
    user_id: UserIdPath,
    body: UserLimitsRequest,
    _admin: AdminDep,
    session: SessionDep,
    shares: SharesSyncDep,
) -> UserLimitsResponse:
    """Replace a user's quotas and share weight, every field (left out or null: cleared;
    admins only). Quotas bound the user's next submissions; the weights reach the scheduler
    at once (if the gateway is unreachable, within ``PLATFORM_SHARES_SYNC_SECONDS``)."""
    limits = await run_in_threadpool(user_limits.set_user_limits, session, user_id, body)
    try:
        await shares.push()
    except PlatformError:  # stored: the timer pushes them again
        _log.warning("the share weights could not be pushed now", exc_info=True)
    return limits
