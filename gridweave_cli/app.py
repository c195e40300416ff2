"""The ``gridweave`` typer application: every command registered in one place."""

from __future__ import annotations

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="gridweave",
    help="Gridweave: run Python functions on a slice of a GPU, and see their results and bill.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def main() -> None:
    """The console script ``gridweave``."""
    app()
