"""``gridweave admin``: what admins do. A user's image-registry quota here; join keys
(``admin_join_keys``), cordoning and draining nodes (``admin_nodes``), users and credit
grants (``admin_users``), users' quotas and share weights (``admin_limits``), their
spending caps (``spending_limits``) beside it,
all registered by :func:`register`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from gridweave_cli._errors import handle_errors
from gridweave_cli._help import command_help
from gridweave_cli._output import JsonFlag, emit_json, stdout
from gridweave_cli._platform import platform_client
from gridweave_cli.admin_join_keys import create_join_key, join_keys, revoke_join_key
from gridweave_cli.admin_limits import user_limits
from gridweave_cli.admin_nodes import cordon, drain, joined_nodes, uncordon
from gridweave_cli.admin_users import grant, users
from gridweave_cli.spending_limits import admin_spending_limits
from gridweave_clients.platform.registry import RegistryUsageResponse, format_size, parse_size

__all__ = ["print_usage", "register", "registry_quota"]


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="SIZE") from exc


@handle_errors
def registry_quota(
    user: Annotated[str, typer.Argument(help="The user's id (usr-...).", show_default=False)],
    size: Annotated[
        str | None,
        typer.Argument(
            help="The new quota: 50GB, 500MB, 1.5GiB... (powers of 1000; KiB, MiB... of 1024).",
            show_default=False,
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Show a user's image-registry usage and quota, or set its quota (admins only).

    The new quota is in force from the user's next push; a push is refused once the usage
    reaches the quota. Without SIZE, the quota is shown unchanged.

    Examples:

        gridweave admin registry-quota usr-0123456789abcdef 50GB

        gridweave admin registry-quota usr-0123456789abcdef --json
    """
    quota = None if size is None else _size(size)
    with platform_client() as client:
        if quota is None:
            answer = client.get_registry_quota(user)
        else:
            answer = client.set_registry_quota(user, quota)
    if json_output:
        emit_json(answer.model_dump(mode="json"))
        return
    print_usage(answer)


def print_usage(answer: RegistryUsageResponse) -> None:
    """A user's quota, usage and blob count as a small table."""
    table = Table(box=None, show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("user", answer.user_id)
    default = " (the default)" if answer.quota_is_default else ""
    table.add_row("quota", f"{format_size(answer.quota_bytes)}{default}")
    table.add_row("usage", format_size(answer.usage_bytes))
    table.add_row("blobs", str(answer.blobs))
    stdout().print(table)


def register(app: typer.Typer) -> None:
    """Add the ``admin`` group to ``app``."""
    admin = typer.Typer(name="admin", help="What admins do.", no_args_is_help=True)
    join_key = typer.Typer(
        name="join-key",
        help="Create or revoke the keys GPU machines join with.",
        no_args_is_help=True,
    )
    join_key.command("create", help=command_help(create_join_key))(create_join_key)
    join_key.command("revoke", help=command_help(revoke_join_key))(revoke_join_key)
    admin.add_typer(join_key)
    for name, command in (
        ("join-keys", join_keys),
        ("nodes", joined_nodes),
        ("cordon", cordon),
        ("uncordon", uncordon),
        ("drain", drain),
        ("users", users),
        ("grant", grant),
        ("user-limits", user_limits),
        ("spending-limits", admin_spending_limits),
        ("registry-quota", registry_quota),
    ):
        admin.command(name, help=command_help(command))(command)
    app.add_typer(admin)
