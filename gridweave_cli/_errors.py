"""One line on stderr and a documented exit code for every failure a command meets.

The platform's refusals (``gridweave_clients`` errors) and the SDK's errors are mapped here
once; a command raises :class:`CliError` for its own. No Python traceback reaches the user
unless ``GRIDWEAVE_DEBUG`` is set (the remote traceback of a failed job is printed by
``gridweave run`` itself).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import NoReturn, ParamSpec, TypeVar

import typer
from rich.markup import escape

import gridweave as gw
from gridweave_cli._output import stderr
from gridweave_cli.exit_codes import ExitCode
from gridweave_clients import (
    InvalidRequest,
    NotFound,
    PaymentRequired,
    ServiceRefused,
    ServiceUnavailable,
    Unauthorized,
)

__all__ = ["CliError", "exit_with", "handle_errors", "warn"]

P = ParamSpec("P")
R = TypeVar("R")


class CliError(Exception):
    """A failure the command explains itself: ``message`` and the exit ``code``."""

    def __init__(self, message: str, code: ExitCode = ExitCode.FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def warn(message: str) -> None:
    """A note on stderr that does not end the command."""
    stderr().print(f"[yellow]note:[/] {escape(message)}")


def exit_with(message: str, code: ExitCode) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    stderr().print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(int(code))


def _refusal_text(exc: ServiceRefused) -> str:
    if isinstance(exc, InvalidRequest) and exc.fields:
        named = "; ".join(f"{item['field']}: {item['message']}" for item in exc.fields)
        return f"{exc.message} ({named})" if named not in exc.message else exc.message
    return exc.message


def describe(exc: Exception) -> tuple[str, ExitCode] | None:
    """The line and the exit code for a known error; None for any other."""
    match exc:
        case CliError():
            return exc.message, exc.code
        case gw.PlatformUnreachable():
            return str(exc), ExitCode.UNREACHABLE
        case ServiceUnavailable():
            return f"the platform could not be reached: {exc.message}", ExitCode.UNREACHABLE
        case gw.InsufficientCredits():
            return str(exc), ExitCode.INSUFFICIENT_CREDITS
        case gw.SpendingLimitReached():
            return str(exc), ExitCode.INSUFFICIENT_CREDITS
        case PaymentRequired():
            return _refusal_text(exc), ExitCode.INSUFFICIENT_CREDITS
        case gw.NoGpuLargeEnough():
            return str(exc), ExitCode.INVALID_REQUEST
        case InvalidRequest():
            return _refusal_text(exc), ExitCode.INVALID_REQUEST
        case Unauthorized():
            message = f"the platform refused the API key: {exc.message} (run `gridweave login`)"
            return message, ExitCode.NOT_LOGGED_IN
        case NotFound():
            return exc.message, ExitCode.NOT_FOUND
        case ServiceRefused():
            return _refusal_text(exc), ExitCode.FAILED
        case gw.ConfigurationError():
            return str(exc), ExitCode.USAGE
        case gw.GridweaveError():
            return str(exc), ExitCode.FAILED
    return None


def handle_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Run ``command``; a known error becomes one line on stderr and its exit code."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.TyperException):  # typer's own handling
            raise
        except Exception as exc:
            if os.environ.get("GRIDWEAVE_DEBUG"):
                raise
            known = describe(exc)
            if known is None:
                text = f"{type(exc).__name__}: {exc} (GRIDWEAVE_DEBUG=1 shows the traceback)"
                exit_with(text, ExitCode.FAILED)
            exit_with(*known)

    return run
