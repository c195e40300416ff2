"""Spending limits: kept and enforced by credit_service, read and set here for the user and
for admins.

The caps are money rules, so they live beside the money: credit_service refuses a hold past
one (402 ``spending_limit``), in the transaction that places it. The platform only passes
the user's own caps (``/v1/account/spending-limits``) and an admin's
(``/v1/admin/users/{id}/spending-limits``, sent with the admin role) on, and a refusal back.
"""

from __future__ import annotations

from datetime import UTC, datetime

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.credit import operations as credit_ops
from gridweave_clients.credit.models import SpendingLimitsRequest, SpendingLimitsResponse
from gridweave_clients.errors import NotFound, PaymentRequired
from platform_service.errors import SpendingLimitReached
from platform_service.services.downstream import as_admin, as_user, downstream_errors

__all__ = [
    "deploy_past_a_cap",
    "get_spending_limits",
    "set_admin_spending_limits",
    "set_spending_limits",
    "spending_limit_reached",
]


def spending_limit_reached(exc: PaymentRequired, *, what: str) -> SpendingLimitReached:
    """The user's 402 for credit_service's ``spending_limit`` refusal of ``what``'s hold."""
    details = exc.details
    return _reached(
        what,
        cap=str(details.get("cap")),
        limit=details.get("limit"),
        spent=details.get("spent"),
        asked=details.get("asked"),
    )


def deploy_past_a_cap(
    limits: SpendingLimitsResponse, *, first_holds: int, period_hold: int
) -> SpendingLimitReached | None:
    """The 402 of an endpoint whose holds would pass a cap in force, before it is created:
    one period's hold past the per-job cap, or its first holds past the monthly cap with
    this month's spending (credit_service would refuse them once it runs); None: within."""
    if limits.per_job_cap is not None and period_hold > limits.per_job_cap:
        what, cap, limit, asked = (
            "each billing period of this endpoint",
            "per_job",
            limits.per_job_cap,
            period_hold,
        )
    elif limits.monthly_cap is not None and limits.spent + first_holds > limits.monthly_cap:
        what, cap, limit, asked = (
            "this endpoint to start",
            "monthly",
            limits.monthly_cap,
            first_holds,
        )
    else:
        return None
    return _reached(what, cap=cap, limit=limit, spent=limits.spent, asked=asked)


def _reached(
    what: str, *, cap: str, limit: object, spent: object, asked: object
) -> SpendingLimitReached:
    name = "monthly" if cap == "monthly" else "per-job"
    return SpendingLimitReached(
        f"spending limit: {what} holds {asked} micro-credits, past the {name} "
        f"cap of {limit} ({spent} spent this month)",
        cap=cap,
        limit=limit,
        spent=spent,
        asked=asked,
    )


def _month_start() -> datetime:
    return datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


async def get_spending_limits(credit: AsyncCreditClient, *, user_id: str) -> SpendingLimitsResponse:
    """The caps in force, each side's, and this month's spending (none before any credit)."""
    with downstream_errors("credit_service", passed=()):
        try:
            return await credit.run(as_user(credit_ops.get_spending_limits(user_id), user_id))
        except NotFound:
            return SpendingLimitsResponse(
                user_id=user_id,
                monthly_cap=None,
                per_job_cap=None,
                user_monthly_cap=None,
                user_per_job_cap=None,
                admin_monthly_cap=None,
                admin_per_job_cap=None,
                month_start=_month_start(),
                spent=0,
            )


async def set_spending_limits(
    credit: AsyncCreditClient, *, user_id: str, body: SpendingLimitsRequest
) -> SpendingLimitsResponse:
    """Replace the user's own caps; credit_service's 422 names one above an admin's."""
    operation = credit_ops.set_spending_limits(
        user_id, monthly_cap=body.monthly_cap, per_job_cap=body.per_job_cap
    )
    with downstream_errors("credit_service", passed={422}):
        return await credit.run(as_user(operation, user_id))


async def set_admin_spending_limits(
    credit: AsyncCreditClient, *, admin_id: str, user_id: str, body: SpendingLimitsRequest
) -> SpendingLimitsResponse:
    """Replace an admin's caps on ``user_id`` (the user must exist: the caller checks)."""
    operation = credit_ops.set_admin_spending_limits(
        user_id, monthly_cap=body.monthly_cap, per_job_cap=body.per_job_cap
    )
    with downstream_errors("credit_service", passed={422}):
        return await credit.run(as_admin(operation, admin_id))
