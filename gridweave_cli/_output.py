"""What every command prints: rich consoles (data to stdout, messages to stderr), JSON, units."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.console import Console

__all__ = ["JsonFlag", "age", "credits_text", "emit_json", "mib_text", "stderr", "stdout"]

#: The ``--json`` option every command that prints data takes.
JsonFlag = Annotated[
    bool,
    typer.Option("--json", help="Print machine-readable JSON on stdout, and nothing else there."),
]


def stdout() -> Console:
    """The console for data (made per call: a test runner swaps ``sys.stdout``)."""
    return Console(highlight=False)


def stderr() -> Console:
    """The console for messages, prompts and progress: never mixed with the data."""
    return Console(stderr=True, highlight=False)


def emit_json(data: Any, *, one_line: bool = False) -> None:
    """Print ``data`` as JSON to stdout, and nothing else (``--json``); ``one_line``: a line
    of JSON Lines."""
    sys.stdout.write(json.dumps(data, indent=None if one_line else 2, default=str) + "\n")
    sys.stdout.flush()


def credits_text(micro_credits: int) -> str:
    """Micro-credits as credits with six decimals, computed on integers (``1.500000``)."""
    sign = "-" if micro_credits < 0 else ""
    whole, fraction = divmod(abs(micro_credits), 1_000_000)
    return f"{sign}{whole:,}.{fraction:06d}"


def mib_text(mib: int) -> str:
    """A VRAM size: whole GiB when it is one, else MiB (``8 GiB``, ``1536 MiB``)."""
    if mib % 1024 == 0:
        return f"{mib // 1024} GiB"
    return f"{mib} MiB"


def age(since: datetime | None, *, now: datetime | None = None) -> str:
    """How long ago, in the largest whole unit (``42s``, ``5m``, ``3h``, ``2d``); ``-``: unknown."""
    if since is None:
        return "-"
    seconds = max(0, int(((now or datetime.now(UTC)) - since).total_seconds()))
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
