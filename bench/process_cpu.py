"""CPU seconds used by a process and its descendants, read from Linux's ``/proc``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["tree_cpu_seconds"]

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int | str) -> list[str] | None:
    try:
        # the fields after the ")" closing the command name: ppid is [1], utime and stime [11, 12]
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None  # exited meanwhile


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat_fields(entry.name)) is not None:
            parents[int(entry.name)] = int(fields[1])
    return parents


def _own_cpu_seconds(pid: int) -> float:
    fields = _stat_fields(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / _TICKS


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` and every live descendant (0 where /proc is missing)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    total, pending = 0.0, [pid]
    while pending:
        current = pending.pop()
        total += _own_cpu_seconds(current)
        pending += children.get(current, [])
    return total
