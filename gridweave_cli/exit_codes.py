"""The exit codes of every ``gridweave`` command, defined once: scripts may rely on them."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["EXIT_CODES_HELP", "ExitCode"]


class ExitCode(IntEnum):
    """What a command's exit status means."""

    #: done
    OK = 0
    #: the remote job failed (its traceback is printed), or another error
    FAILED = 1
    #: the command line was not understood (typer's own code)
    USAGE = 2
    #: no such job (or not yours)
    NOT_FOUND = 3
    #: not enough credits, or past a spending cap (402)
    INSUFFICIENT_CREDITS = 4
    #: no GPU large enough, or another field the platform refused (422)
    INVALID_REQUEST = 5
    #: not logged in, or the API key was refused (401)
    NOT_LOGGED_IN = 6
    #: the platform could not be reached
    UNREACHABLE = 7


_MEANINGS = {
    ExitCode.OK: "ok",
    ExitCode.FAILED: "the remote job failed, or another error",
    ExitCode.USAGE: "usage error",
    ExitCode.NOT_FOUND: "not found",
    ExitCode.INSUFFICIENT_CREDITS: "insufficient credits or a spending limit (402)",
    ExitCode.INVALID_REQUEST: "no GPU large enough / invalid request (422)",
    ExitCode.NOT_LOGGED_IN: "not logged in / API key refused (401)",
    ExitCode.UNREACHABLE: "platform unreachable",
}

#: The exit codes as the ``gridweave --help`` epilog shows them.
EXIT_CODES_HELP = "Exit codes: " + ", ".join(
    f"{int(code)} {meaning}" for code, meaning in _MEANINGS.items()
)
