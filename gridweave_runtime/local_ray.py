"""The local Ray head's processes, found and stopped without importing Ray.

A local head (``ray start --head --temp-dir=<dir>``, started by the gateway) runs in a
session of its own so that it outlives the gateway. Whoever owns the machine's lifetime
(the gateway's tests, the all-in-one on Ctrl-C) stops it here, by its temporary directory.
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path

__all__ = ["head_processes", "ray_temp_dir", "stop_local_head"]

#: Ray's Unix sockets live under the temporary directory, whose paths AF_UNIX caps at 107
#: bytes: ``<temp>/session_<YYYY-MM-DD_HH-MM-SS_ffffff>_<pid>/sockets/plasma_store`` adds
#: 1 + 42 (a pid of up to 7 digits) + 21 characters, which leaves 43 for the directory.
_MAX_TEMP_DIR_CHARS = 43


def ray_temp_dir(state_dir: Path) -> Path:
    """``<state>/ray``, or a short path under /tmp derived from it when that is too long."""
    wanted = (state_dir / "ray").resolve()
    if len(str(wanted)) <= _MAX_TEMP_DIR_CHARS:
        return wanted
    digest = hashlib.sha256(str(wanted).encode()).hexdigest()[:12]
    return Path("/tmp") / f"gridweave-ray-{digest}"


def head_processes(temp_dir: Path) -> list[int]:
    """The processes of the Ray session under ``temp_dir``: its sessions' members.

    ``ray start`` runs in a session of its own, so every process of the head (workers and
    agents too, whose command lines Ray rewrites) shares the session id of the processes
    whose command line names ``temp_dir``.
    """
    marker = str(temp_dir).encode()
    own = os.getsid(0)
    members: dict[int, int] = {}
    sessions: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            session = os.getsid(pid)
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if not command:  # a zombie: nothing left to stop
            continue
        members[pid] = session
        if marker in command and session != own:
            sessions.add(session)
    return sorted(pid for pid, session in members.items() if session in sessions)


def stop_local_head(temp_dir: Path, *, grace_s: float = 10.0) -> list[int]:
    """Stop the local head of ``temp_dir`` and its workers by process id; the ids stopped.

    SIGTERM, then SIGKILL for what is left after ``grace_s``. Not ``ray stop``: that stops
    every Ray session of the machine.
    """
    pids = head_processes(temp_dir)
    _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not head_processes(temp_dir):
            return pids
        time.sleep(0.2)
    _signal(head_processes(temp_dir), signal.SIGKILL)
    return pids


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass
