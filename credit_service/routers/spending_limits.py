"""``/v1/accounts/{user_id}/spending-limits``: a user's caps and this month's spending."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from credit_service.routers.common import SessionDep
from credit_service.services import spending_limits
from gridweave_clients.credit.models import (
    SpendingLimitsRequest,
    SpendingLimitsResponse,
    UserId,
)
from gridweave_runtime.auth import callable_by, require_internal_caller

__all__ = ["ADMIN_CAP_ROLES", "router"]

#: The roles that may set an admin's caps, which the user cannot raise.
ADMIN_CAP_ROLES = ("admin",)

router = APIRouter(
    prefix="/v1/accounts", tags=["spending limits"], dependencies=[Depends(require_internal_caller)]
)
UserIdPath = Annotated[UserId, Path()]


@router.get("/{user_id}/spending-limits")
def get_spending_limits(user_id: UserIdPath, session: SessionDep) -> SpendingLimitsResponse:
    """The caps in force, each side's, and this month's spending; 404 without an account."""
    return spending_limits.get_spending_limits(session, user_id=user_id)


@router.put("/{user_id}/spending-limits", dependencies=callable_by("platform"))
def set_spending_limits(
    user_id: UserIdPath, body: SpendingLimitsRequest, session: SessionDep
) -> SpendingLimitsResponse:
    """Replace the user's own caps (null clears one); 422 naming a cap above the admin's."""
    return spending_limits.set_user_spending_limits(
        session, user_id=user_id, monthly_cap=body.monthly_cap, per_job_cap=body.per_job_cap
    )


@router.put("/{user_id}/admin-spending-limits", dependencies=callable_by(*ADMIN_CAP_ROLES))
def set_admin_spending_limits(
    user_id: UserIdPath, body: SpendingLimitsRequest, session: SessionDep
) -> SpendingLimitsResponse:
    """Replace an admin's caps on the user (admins only; null clears one)."""
    return spending_limits.set_admin_spending_limits(
        session, user_id=user_id, monthly_cap=body.monthly_cap, per_job_cap=body.per_job_cap
    )
