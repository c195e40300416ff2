"""``gridweave registry``: your image-registry usage and quota, and sharing repositories."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from gridweave_cli._errors import handle_errors
from gridweave_cli._help import add_commands
from gridweave_cli._output import JsonFlag, emit_json, stdout
from gridweave_cli._platform import platform_client
from gridweave_cli.admin import print_usage

__all__ = ["register", "share", "shares", "unshare", "usage"]

RepositoryArgument = Annotated[
    str, typer.Argument(help="A repository of yours: usr-.../NAME.", show_default=False)
]
UserArgument = Annotated[str, typer.Argument(help="The user's id (usr-...).", show_default=False)]


@handle_errors
def usage(json_output: JsonFlag = False) -> None:
    """Show what your images take in the registry, and your quota.

    Examples:

        gridweave registry usage
    """
    with platform_client() as client:
        answer = client.get_registry_usage()
    if json_output:
        emit_json(answer.model_dump(mode="json"))
        return
    print_usage(answer)


@handle_errors
def share(
    repository: RepositoryArgument, user: UserArgument, json_output: JsonFlag = False
) -> None:
    """Let another user pull one of your repositories (pull only).

    Examples:

        gridweave registry share usr-0123456789abcdef/model usr-fedcba9876543210
    """
    with platform_client() as client:
        answer = client.share_repository(repository, user)
    if json_output:
        emit_json(answer.model_dump(mode="json"))
        return
    stdout().print(f"{answer.user_id} may pull {answer.repository}")


@handle_errors
def unshare(
    repository: RepositoryArgument, user: UserArgument, json_output: JsonFlag = False
) -> None:
    """Stop sharing one of your repositories with a user.

    Examples:

        gridweave registry unshare usr-0123456789abcdef/model usr-fedcba9876543210
    """
    with platform_client() as client:
        answer = client.unshare_repository(repository, user)
    if json_output:
        emit_json(answer.model_dump(mode="json"))
        return
    stdout().print(f"{answer.user_id} may no longer pull {answer.repository}")


@handle_errors
def shares(json_output: JsonFlag = False) -> None:
    """List your repositories shared with others, and others' shared with you.

    Examples:

        gridweave registry shares --json
    """
    with platform_client() as client:
        answer = client.list_registry_shares()
    if json_output:
        emit_json(answer.model_dump(mode="json"))
        return
    table = Table("repository", "user", "since", box=None)
    for kind, rows in (("granted", answer.granted), ("received", answer.received)):
        for row in rows:
            table.add_row(row.repository, f"{row.user_id} ({kind})", f"{row.created_at:%Y-%m-%d}")
    stdout().print(table if table.rows else "No shares.")


def register(app: typer.Typer) -> None:
    """Add the ``registry`` group to ``app``."""
    group = typer.Typer(
        name="registry", help="Your images in the Gridweave registry.", no_args_is_help=True
    )
    add_commands(group, usage, share, unshare, shares)
    app.add_typer(group)
