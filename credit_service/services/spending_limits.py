"""Spending limits: a monthly and a per-job cap per account, the user's and an admin's.

The rule, checked by :func:`check_hold_within_caps` when a hold is placed, in the
transaction that then moves the money, the account's row locked first:

- ``per_job``: the hold's amount must not pass the per-job cap in force;
- ``monthly``: ``spent + amount`` must not pass the monthly cap in force, where ``spent`` is
  what the account was charged since the first of the month, UTC (its ``deduct``,
  ``capture`` and ``settlement`` entries) plus ``held`` (every open hold, whenever placed).

A cap in force is the lower of the user's and the admin's; NULL (no cap) on both: none. The
user sets their own caps, never above an admin's; only the ``admin`` role sets an admin's.
Only holds are refused: a capture or settlement never is (its hold already counted).
"""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import Row
from sqlalchemy.orm import Session

from credit_service import queries
from credit_service.errors import AccountNotFound, SpendingLimitReached
from credit_service.services.ledger import ensure_account, get_account
from gridweave_clients.credit.models import SpendingLimitsResponse
from gridweave_runtime.errors import InvalidRequest

__all__ = [
    "check_hold_within_caps",
    "get_spending_limits",
    "set_admin_spending_limits",
    "set_user_spending_limits",
]

Side = Literal["user", "admin"]


def check_hold_within_caps(session: Session, *, account_id: int, amount: int) -> None:
    """Refuse a hold of ``amount`` that would pass a cap in force; nothing when uncapped.

    Raises:
        SpendingLimitReached: naming the cap, its limit, this month's spending and ``amount``.
    """
    caps = queries.read_spending_caps(session, account_id=account_id, lock=False)
    if caps is None or (caps.monthly_in_force is None and caps.per_job_in_force is None):
        return
    # locked, then summed by a later statement: a posting that committed while this waited
    # is in both the row's held and the sum, so concurrent holds cannot pass the cap together
    caps = queries.read_spending_caps(session, account_id=account_id, lock=True)
    if caps is None:
        raise AccountNotFound(account_id=account_id)
    spent = _spent(session, caps)
    if caps.per_job_in_force is not None and amount > caps.per_job_in_force:
        raise _refusal(caps, "per_job", caps.per_job_in_force, spent, amount)
    if caps.monthly_in_force is not None and spent + amount > caps.monthly_in_force:
        raise _refusal(caps, "monthly", caps.monthly_in_force, spent, amount)


def _spent(session: Session, caps: Row[Any]) -> int:
    charged = queries.read_month_spending(session, account_id=caps.id).charged
    held: int = caps.held
    return int(charged) + held  # SUM of BIGINT is NUMERIC


def _refusal(caps: Row[Any], cap: str, limit: int, spent: int, asked: int) -> SpendingLimitReached:
    name = "monthly spending limit" if cap == "monthly" else "per-job spending limit"
    return SpendingLimitReached(
        f"this hold of {asked} micro-credits would pass the {name} of {limit} "
        f"micro-credits ({spent} spent this month)",
        user_id=caps.user_id,
        cap=cap,
        limit=limit,
        spent=spent,
        asked=asked,
    )


def get_spending_limits(session: Session, *, user_id: str) -> SpendingLimitsResponse:
    """The caps of ``user_id`` and this month's spending; raises AccountNotFound."""
    return _limits_response(session, user_id, get_account(session, user_id).id)


def set_user_spending_limits(
    session: Session, *, user_id: str, monthly_cap: int | None, per_job_cap: int | None
) -> SpendingLimitsResponse:
    """Replace the user's own caps (null clears one; the account opened if missing).

    Raises:
        InvalidRequest: a cap above the admin's, the field named.
    """
    return _set_caps(session, user_id, "user", monthly_cap, per_job_cap)


def set_admin_spending_limits(
    session: Session, *, user_id: str, monthly_cap: int | None, per_job_cap: int | None
) -> SpendingLimitsResponse:
    """Replace an admin's caps on ``user_id`` (null clears one; the account opened if
    missing). The caller's role was checked by the router."""
    return _set_caps(session, user_id, "admin", monthly_cap, per_job_cap)


def _set_caps(
    session: Session,
    user_id: str,
    side: Side,
    monthly_cap: int | None,
    per_job_cap: int | None,
) -> SpendingLimitsResponse:
    account_id = ensure_account(session, user_id).id
    current = queries.read_spending_caps(session, account_id=account_id, lock=True)
    assert current is not None  # just ensured
    if side == "user":
        _within_admin_cap("monthly_cap", monthly_cap, current.admin_monthly_cap)
        _within_admin_cap("per_job_cap", per_job_cap, current.admin_per_job_cap)
    queries.write_spending_caps(
        session,
        account_id=account_id,
        side=side,
        monthly_cap=monthly_cap,
        per_job_cap=per_job_cap,
    )
    response = _limits_response(session, user_id, account_id)
    session.commit()
    return response


def _within_admin_cap(field: str, cap: int | None, admin_cap: int | None) -> None:
    if cap is not None and admin_cap is not None and cap > admin_cap:
        raise InvalidRequest(
            field,
            f"must not pass the cap an admin set ({admin_cap} micro-credits); "
            "ask an admin to raise it",
        )


def _limits_response(session: Session, user_id: str, account_id: int) -> SpendingLimitsResponse:
    caps = queries.read_spending_caps(session, account_id=account_id, lock=False)
    if caps is None:
        raise AccountNotFound(user_id=user_id)
    month = queries.read_month_spending(session, account_id=account_id)
    return SpendingLimitsResponse(
        user_id=user_id,
        monthly_cap=caps.monthly_in_force,
        per_job_cap=caps.per_job_in_force,
        user_monthly_cap=caps.monthly_cap,
        user_per_job_cap=caps.per_job_cap,
        admin_monthly_cap=caps.admin_monthly_cap,
        admin_per_job_cap=caps.admin_per_job_cap,
        month_start=month.start,
        spent=int(month.charged) + caps.held,
    )
