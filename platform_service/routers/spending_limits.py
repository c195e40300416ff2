"""``/v1/account/spending-limits`` (the caller's own caps) and
``/v1/admin/users/{user_id}/spending-limits`` (an admin's caps on a user)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from starlette.concurrency import run_in_threadpool

from gridweave_clients.credit.models import SpendingLimitsRequest, SpendingLimitsResponse
from platform_service.routers.common import AdminDep, CreditDep, SessionDep, UserDep
from platform_service.services import spending_limits, users

__all__ = ["router"]

router = APIRouter(tags=["account"])

UserIdPath = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._-]+$")]


@router.get("/v1/account/spending-limits")
async def get_spending_limits(user: UserDep, credit: CreditDep) -> SpendingLimitsResponse:
    """The caps in force (the lower of yours and an admin's), each side's, and what was
    spent this month (UTC): charged plus held now; micro-credits."""
    return await spending_limits.get_spending_limits(credit, user_id=user.user_id)


@router.put("/v1/account/spending-limits")
async def set_spending_limits(
    body: SpendingLimitsRequest, user: UserDep, credit: CreditDep
) -> SpendingLimitsResponse:
    """Replace your own caps, both (left out or null: cleared); 422 naming a cap above the
    one an admin set. A submission whose hold would pass a cap is then 402
    ``spending_limit``."""
    return await spending_limits.set_spending_limits(credit, user_id=user.user_id, body=body)


@router.get("/v1/admin/users/{user_id}/spending-limits")
async def get_user_spending_limits(
    user_id: UserIdPath, _admin: AdminDep, session: SessionDep, credit: CreditDep
) -> SpendingLimitsResponse:
    """A user's caps and this month's spending (admins only; 404 for no such user)."""
    await run_in_threadpool(users.get_user, session, user_id)
    return await spending_limits.get_spending_limits(credit, user_id=user_id)


@router.put("/v1/admin/users/{user_id}/spending-limits")
async def set_user_spending_limits(
    user_id: UserIdPath,
    body: SpendingLimitsRequest,
    admin: AdminDep,
    session: SessionDep,
    credit: CreditDep,
) -> SpendingLimitsResponse:
    """Replace the caps an admin sets on a user, both (null: cleared), which the user cannot
    raise; the lower of theirs and these is in force (admins only; 404 for no such user)."""
    await run_in_threadpool(users.get_user, session, user_id)
    return await spending_limits.set_admin_spending_limits(
        credit, admin_id=admin.user_id, user_id=user_id, body=body
    )
