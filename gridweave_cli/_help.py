"""Commands added to the app with their docstrings as help, re-flowed for the terminal."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import typer

__all__ = ["add_commands", "command_help"]


def command_help(command: Callable[..., Any]) -> str:
    """The docstring as help: each prose paragraph on one line (the terminal wraps it), the
    indented example paragraphs kept as written."""
    paragraphs = inspect.cleandoc(command.__doc__ or "").split("\n\n")
    kept = []
    for paragraph in paragraphs:
        lines = paragraph.splitlines()
        if lines and all(line.startswith(" ") for line in lines):
            kept.append(paragraph)
        else:
            kept.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(kept)


def add_commands(app: typer.Typer, *commands: Callable[..., Any]) -> None:
    """Add each function to ``app`` as the command of its name."""
    for command in commands:
        app.command(help=command_help(command))(command)
