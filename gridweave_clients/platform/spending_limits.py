"""Spending limits through the platform: your own caps (``/v1/account/spending-limits``) and
an admin's on a user (``/v1/admin/users/{id}/spending-limits``), in micro-credits.

credit_service keeps and enforces them: a hold past a cap in force (the lower of the user's
and the admin's) is refused with 402 ``spending_limit`` naming ``cap``, ``limit``, ``spent``
and ``asked``. The bodies are credit_service's own models.
"""

from __future__ import annotations

from urllib.parse import quote

from pydantic import validate_call

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.credit.models import (
    SpendingCap,
    SpendingLimitsRequest,
    SpendingLimitsResponse,
)
from gridweave_clients.platform.registry import UserId

__all__ = [
    "SpendingLimitsRequest",
    "SpendingLimitsResponse",
    "get_spending_limits",
    "get_user_spending_limits",
    "set_spending_limits",
    "set_user_spending_limits",
]

_OWN = "/v1/account/spending-limits"


def _admin_path(user_id: str) -> str:
    return f"/v1/admin/users/{quote(user_id, safe='')}/spending-limits"


def get_spending_limits() -> Operation[SpendingLimitsResponse]:
    """Your caps in force, each side's, and what you spent this month."""
    return model_operation("GET", _OWN, SpendingLimitsResponse)


@validate_call
def set_spending_limits(
    *, monthly_cap: SpendingCap | None = None, per_job_cap: SpendingCap | None = None
) -> Operation[SpendingLimitsResponse]:
    """Replace your own caps, both (None clears one); InvalidRequest above an admin's."""
    body = SpendingLimitsRequest(monthly_cap=monthly_cap, per_job_cap=per_job_cap)
    return model_operation("PUT", _OWN, SpendingLimitsResponse, body=body, idempotent=True)


@validate_call
def get_user_spending_limits(user_id: UserId) -> Operation[SpendingLimitsResponse]:
    """A user's caps and this month's spending (admins)."""
    return model_operation("GET", _admin_path(user_id), SpendingLimitsResponse)


@validate_call
def set_user_spending_limits(
    user_id: UserId,
    *,
    monthly_cap: SpendingCap | None = None,
    per_job_cap: SpendingCap | None = None,
) -> Operation[SpendingLimitsResponse]:
    """Replace an admin's caps on ``user_id``, both (None clears one; admins)."""
    body = SpendingLimitsRequest(monthly_cap=monthly_cap, per_job_cap=per_job_cap)
    return model_operation(
        "PUT", _admin_path(user_id), SpendingLimitsResponse, body=body, idempotent=True
    )
