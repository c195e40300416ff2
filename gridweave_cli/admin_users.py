"""``gridweave admin users`` and ``gridweave admin grant USER AMOUNT``: the platform's users,
and credits given to one of them."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gridweave_cli._errors import handle_errors
from gridweave_cli._output import JsonFlag, credits_text, emit_json, stderr, stdout
from gridweave_cli._platform import platform_client
from gridweave_clients.platform.admin import new_grant_key, parse_credits

__all__ = ["grant", "users"]


@handle_errors
def users(
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=500, help="Show at most this many users.")
    ] = 100,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Skip this many users first.")] = 0,
    json_output: JsonFlag = False,
) -> None:
    """List the platform's users, oldest first: id, email, role, when made and verified
    (admins only).

    Examples:

        gridweave admin users

        gridweave admin users --limit 50 --offset 100 --json
    """
    with platform_client() as client:
        page = client.list_users(limit=limit, offset=offset)
    if json_output:
        emit_json(page.model_dump(mode="json"))
        return
    if not page.users:
        stdout().print(f"No users here ({page.total} in all).")
        return
    table = Table("user", "email", "role", "created", "verified", box=None)
    for user in page.users:
        table.add_row(
            user.user_id,
            escape(user.email or "-"),
            user.role,
            f"{user.created_at:%Y-%m-%d %H:%M}",
            "-" if user.verified_at is None else f"{user.verified_at:%Y-%m-%d %H:%M}",
        )
    stdout().print(table)
    first = offset + 1
    stderr().print(f"users {first}-{offset + len(page.users)} of {page.total}")


@handle_errors
def grant(
    user: Annotated[str, typer.Argument(help="The user's id (usr-...).", show_default=False)],
    amount: Annotated[
        str,
        typer.Argument(
            help="Credits to give: 10, 2.5, 0.000001 (six decimals at most).",
            show_default=False,
        ),
    ],
    idempotency_key: Annotated[
        str | None,
        typer.Option(
            "--idempotency-key",
            help="8-64 letters, digits, - or _: the same key again grants nothing more "
            "(default: a new key, printed).",
            show_default=False,
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Give a user credits (admins only): minted into the user's balance, one ledger entry.

    A grant is made once per idempotency key. Without --idempotency-key a new key is drawn
    and printed: the command's own retries are then safe, but running the command again
    grants again. To repeat a grant safely (say, after a lost connection), pass the same
    --idempotency-key each time: the platform answers the first grant and mints nothing.

    Examples:

        gridweave admin grant usr-0123456789abcdef 25

        gridweave admin grant usr-0123456789abcdef 2.5 --idempotency-key refund-2026-12-04
    """
    try:
        micro_credits = parse_credits(amount)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="AMOUNT") from exc
    key = idempotency_key or new_grant_key()
    with platform_client() as client:
        granted = client.grant_credits(user, micro_credits, idempotency_key=key)
    if json_output:
        emit_json(granted.model_dump(mode="json"))
        return
    stdout().print(
        f"granted {credits_text(granted.amount)} credits to {granted.user_id}: "
        f"balance {credits_text(granted.balance)}, available {credits_text(granted.available)}"
    )
    stderr().print(f"idempotency key {granted.idempotency_key} (pass it again to repeat safely)")
