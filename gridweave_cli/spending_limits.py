"""Spending limits on the command line: ``gridweave credits limits`` (your own caps) and
``gridweave admin spending-limits USER`` (an admin's caps on a user), and what
``gridweave credits`` shows of them: the caps, this month's spending, a warning at 80%."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated

import typer
from rich.table import Table

from gridweave_cli._errors import handle_errors
from gridweave_cli._output import JsonFlag, credits_text, emit_json, stderr, stdout
from gridweave_cli._platform import platform_client
from gridweave_clients.credit.models import SpendingLimitsResponse

__all__ = [
    "WARN_AT_PERCENT",
    "add_spending_rows",
    "admin_spending_limits",
    "limits",
    "parse_credits",
    "spending_warning",
]

#: ``gridweave credits`` warns once this share of the monthly cap is spent.
WARN_AT_PERCENT = 80
_NONE = "none"
_MICRO = 1_000_000


def parse_credits(text: str) -> int:
    """Credits in ``text`` (``50``, ``2.5``) as micro-credits; ValueError when it is not."""
    try:
        amount = Decimal(text.strip()) * _MICRO
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a number of credits (50, 2.5 or none)") from None
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"{text!r}: a cap is 0 or more credits")
    if amount != amount.to_integral_value():
        raise ValueError(f"{text!r}: at most 6 decimals (1 micro-credit)")
    return int(amount)


def _cap(text: str | None, current: int | None, clear: bool, hint: str) -> int | None:
    """The cap to send: ``current`` (no option; None with ``--clear``), None for ``none``,
    else ``text`` parsed."""
    if text is None:
        return None if clear else current
    if text.strip().lower() == _NONE:
        return None
    try:
        return parse_credits(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=hint) from exc


MonthlyOption = Annotated[
    str | None,
    typer.Option(
        "--monthly",
        help="Credits that may be spent in a calendar month (UTC); none: no cap.",
        show_default=False,
    ),
]
PerJobOption = Annotated[
    str | None,
    typer.Option(
        "--per-job", help="Credits one job's hold may be; none: no cap.", show_default=False
    ),
]
ClearOption = Annotated[bool, typer.Option("--clear", help="Clear both caps first.")]


@handle_errors
def limits(
    monthly: MonthlyOption = None,
    per_job: PerJobOption = None,
    clear: ClearOption = False,
    json_output: JsonFlag = False,
) -> None:
    """Show your spending caps, or set them, in credits.

    A job (or map worker, or an endpoint's billing period) whose hold would take this
    month's spending past the monthly cap, or that alone passes the per-job cap, is refused
    (exit 4); an endpoint is stopped with reason SpendingLimit. An admin's cap, when lower,
    is in force, and yours cannot go above it. Options left out keep their value.

    Examples:

        gridweave credits limits --monthly 50 --per-job 5

        gridweave credits limits --per-job none

        gridweave credits limits --clear
    """
    with platform_client() as client:
        current = client.get_spending_limits()
        if clear or monthly is not None or per_job is not None:
            current = client.set_spending_limits(
                monthly_cap=_cap(monthly, current.user_monthly_cap, clear, "--monthly"),
                per_job_cap=_cap(per_job, current.user_per_job_cap, clear, "--per-job"),
            )
    _show(current, json_output)


@handle_errors
def admin_spending_limits(
    user: Annotated[str, typer.Argument(help="The user's id (usr-...).", show_default=False)],
    monthly: MonthlyOption = None,
    per_job: PerJobOption = None,
    clear: ClearOption = False,
    json_output: JsonFlag = False,
) -> None:
    """Show a user's spending caps, or set the ones an admin sets, in credits (admins only).

    The lower of the user's own cap and yours is in force; the user cannot set theirs above
    yours. Options left out keep their value.

    Examples:

        gridweave admin spending-limits usr-0123456789abcdef

        gridweave admin spending-limits usr-0123456789abcdef --monthly 100 --per-job 10
    """
    with platform_client() as client:
        current = client.get_user_spending_limits(user)
        if clear or monthly is not None or per_job is not None:
            current = client.set_user_spending_limits(
                user,
                monthly_cap=_cap(monthly, current.admin_monthly_cap, clear, "--monthly"),
                per_job_cap=_cap(per_job, current.admin_per_job_cap, clear, "--per-job"),
            )
    _show(current, json_output)


def _show(current: SpendingLimitsResponse, json_output: bool) -> None:
    if json_output:
        emit_json(current.model_dump(mode="json"))
        return
    table = Table(box=None, show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("user", current.user_id)
    add_spending_rows(table, current)
    own = _pair(current.user_monthly_cap, current.user_per_job_cap)
    table.add_row("yours (monthly, per job)", own)
    admins = _pair(current.admin_monthly_cap, current.admin_per_job_cap)
    table.add_row("an admin's (monthly, per job)", admins)
    stdout().print(table)
    _print_warning(current)


def _cap_text(micro_credits: int | None) -> str:
    return "none" if micro_credits is None else credits_text(micro_credits)


def _pair(monthly: int | None, per_job: int | None) -> str:
    return f"{_cap_text(monthly)}, {_cap_text(per_job)}"


def add_spending_rows(table: Table, current: SpendingLimitsResponse) -> None:
    """The month's spending and the caps in force, as rows of a two-column table."""
    table.add_row(f"spent since {current.month_start:%Y-%m-%d}", credits_text(current.spent))
    table.add_row("monthly cap", _cap_text(current.monthly_cap))
    table.add_row("per-job cap", _cap_text(current.per_job_cap))


def spending_warning(current: SpendingLimitsResponse) -> str | None:
    """The warning once ``WARN_AT_PERCENT`` of the monthly cap is spent; None before."""
    cap = current.monthly_cap
    if cap is None or current.spent * 100 < cap * WARN_AT_PERCENT:
        return None
    percent = 100 if cap == 0 else current.spent * 100 // cap
    return (
        f"{percent}% of your monthly spending cap is used: {credits_text(current.spent)} of "
        f"{credits_text(cap)} credits this month (held included); a job past it is refused"
    )


def _print_warning(current: SpendingLimitsResponse) -> None:
    warning = spending_warning(current)
    if warning is not None:
        stderr().print(f"[yellow]warning:[/] {warning}")
