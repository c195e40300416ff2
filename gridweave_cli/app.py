"""The ``gridweave`` typer application: every command registered in one place."""

from __future__ import annotations

import typer

from gridweave_cli import (
    admin,
    credits,
    endpoint_logs,
    endpoints,
    jobs,
    login,
    maps,
    nodes,
    prices,
    receipt,
    registry,
    run,
    up,
)
from gridweave_cli.exit_codes import EXIT_CODES_HELP

__all__ = ["app", "main"]

app = typer.Typer(
    name="gridweave",
    help="Gridweave: run Python functions on a slice of a GPU, and see their results and bill.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    epilog=EXIT_CODES_HELP,
)
for commands in (
    up,
    login,
    run,
    maps,
    jobs,
    endpoints,
    endpoint_logs,
    credits,
    prices,
    nodes,
    receipt,
    registry,
    admin,
):
    commands.register(app)


def main() -> None:
    """The console script ``gridweave``."""
    app()
