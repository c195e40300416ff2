"""Your spending limits: a monthly cap and a per-job cap, in credits.

    gw.set_spending_limits(monthly=50, per_job=5)   # credits; None clears one
    limits = gw.spending_limits()                    # limits.monthly, limits.spent, ...

A submission whose hold would pass a cap in force (the lower of yours and one an admin set)
raises :class:`gridweave.errors.SpendingLimitReached`; an endpoint whose next billing period
would pass it is stopped with reason ``SpendingLimit``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation

from gridweave._client import platform_client, platform_errors
from gridweave._config import current_config
from gridweave.errors import ConfigurationError
from gridweave_clients.credit.models import SpendingLimitsResponse

__all__ = ["MICRO_CREDITS_PER_CREDIT", "SpendingLimits", "set_spending_limits", "spending_limits"]

#: 1 credit = 1,000,000 micro-credits, the unit the platform counts money in.
MICRO_CREDITS_PER_CREDIT = 1_000_000


@dataclass(frozen=True)
class SpendingLimits:
    """Your caps and this month's spending, in credits (exact decimals).

    ``monthly`` and ``per_job`` are in force: the lower of yours (``own_*``) and an admin's
    (``admin_*``); None: no cap. ``spent``: what was charged since ``month_start`` (the first
    of the month, UTC) plus what your running jobs and endpoints hold now.
    """

    monthly: Decimal | None
    per_job: Decimal | None
    own_monthly: Decimal | None
    own_per_job: Decimal | None
    admin_monthly: Decimal | None
    admin_per_job: Decimal | None
    spent: Decimal
    month_start: datetime


def _credits(micro_credits: int) -> Decimal:
    return Decimal(micro_credits) / MICRO_CREDITS_PER_CREDIT


def _optional_credits(micro_credits: int | None) -> Decimal | None:
    return None if micro_credits is None else _credits(micro_credits)


def _micro_credits(name: str, value: int | float | Decimal | str | None) -> int | None:
    """``value`` credits as whole micro-credits; ConfigurationError naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigurationError(f"{name}: a number of credits, not {value!r}")
    try:
        amount = Decimal(str(value)) * MICRO_CREDITS_PER_CREDIT
    except InvalidOperation:
        raise ConfigurationError(f"{name}: a number of credits, not {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise ConfigurationError(f"{name}: must be 0 or more credits, not {value!r}")
    if amount != amount.to_integral_value():
        raise ConfigurationError(f"{name}: at most 6 decimals (1 micro-credit), not {value!r}")
    return int(amount)


def _limits(response: SpendingLimitsResponse) -> SpendingLimits:
    return SpendingLimits(
        monthly=_optional_credits(response.monthly_cap),
        per_job=_optional_credits(response.per_job_cap),
        own_monthly=_optional_credits(response.user_monthly_cap),
        own_per_job=_optional_credits(response.user_per_job_cap),
        admin_monthly=_optional_credits(response.admin_monthly_cap),
        admin_per_job=_optional_credits(response.admin_per_job_cap),
        spent=_credits(response.spent),
        month_start=response.month_start,
    )


def spending_limits() -> SpendingLimits:
    """Your caps in force, yours and an admin's, and what you spent this month."""
    config = current_config()
    with platform_errors(config.url):
        return _limits(platform_client(config).get_spending_limits())


def set_spending_limits(
    *,
    monthly: int | float | Decimal | str | None = None,
    per_job: int | float | Decimal | str | None = None,
) -> SpendingLimits:
    """Replace your own caps, both, in credits (None: no cap of yours).

    Raises:
        ConfigurationError: a negative cap, or one finer than a micro-credit.
        gridweave_clients.InvalidRequest: a cap above one an admin set (the field named).
    """
    monthly_cap = _micro_credits("monthly", monthly)
    per_job_cap = _micro_credits("per_job", per_job)
    config = current_config()
    with platform_errors(config.url):
        response = platform_client(config).set_spending_limits(
            monthly_cap=monthly_cap, per_job_cap=per_job_cap
        )
    return _limits(response)
