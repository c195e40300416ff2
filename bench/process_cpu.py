"""CPU seconds used by a process and its descendants, read from Linux's ``/proc``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["cpu_seconds_by_command", "tree_cpu_seconds"]

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


def cpu_seconds_by_command(groups: Sequence[tuple[str, str]]) -> dict[str, float]:
    """User + system CPU of every live process, summed by group: ``groups`` pairs a word
    of the command line with the group's name (the first word found wins); the rest
    count as ``other``."""
    used: dict[str, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # ended meanwhile
        name = next((group for word, group in groups if word in command), "other")
        used[name] = used.get(name, 0.0) + _own_cpu_seconds(int(entry.name))
    return used
