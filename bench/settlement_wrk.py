"""Send settlements with ``wrk`` (C, epoll), so the load generator takes little of the CPU.

``wrk`` runs ``bench/settlements.lua`` with one thread and N keep-alive connections; the
script sends each settlement once and writes every answer to a file, read back here.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["INSTALL_HINT", "WrkRun", "find_wrk", "settle_with_wrk"]

SCRIPT = Path(__file__).with_name("settlements.lua")
INSTALL_HINT = (
    "wrk is not installed. Install it (Debian/Ubuntu: apt-get update && apt-get install -y wrk;"
    " macOS: brew install wrk), or run with --load python (slower: the Python load generator"
    " takes a large share of the same CPUs)."
)


@dataclass(frozen=True)
class WrkRun:
    """What one wrk run took, what each settlement was answered, and wrk's own CPU."""

    seconds: float
    answers: list[tuple[int, str]]
    cpu_seconds: float


def find_wrk() -> str | None:
    """The wrk executable on PATH, or None."""
    return shutil.which("wrk")


def settle_with_wrk(
    wrk: str, *, port: int, clients: int, token: str, settlements: list[tuple[str, str, int]]
) -> WrkRun:
    """Send every (reference, user_id, amount) once from ``clients`` connections."""
    with tempfile.TemporaryDirectory(prefix="gridweave-wrk-") as folder:
        listing, answers_file = Path(folder) / "settlements", Path(folder) / "answers"
        listing.write_text("".join(f"{ref} {user} {amount}\n" for ref, user, amount in settlements))
        command = [wrk, "-t1", f"-c{clients}", "-d600s", "--timeout", "30s", "-s", str(SCRIPT)]
        command += [f"http://127.0.0.1:{port}", "--", str(listing), str(answers_file), token]
        # the time runs from starting wrk (reading the list included) to seeing the last
        # answer's marker (polled): the figure errs low, never high
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        done = answers_file.with_name(answers_file.name + ".done")
        while not done.exists() and process.poll() is None:
            time.sleep(0.002)
        seconds = time.perf_counter() - started
        process.send_signal(signal.SIGINT)  # ends wrk's -d sleep: it prints and exits
        assert process.stdout is not None
        output = process.stdout.read().decode(errors="replace")
        # wait4, not wait: it also reports the CPU the wrk process used
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0 or not answers_file.exists():
            raise RuntimeError(f"wrk failed (exit {process.returncode}):\n{output}")
        answers = []
        for line in answers_file.read_text().splitlines():
            code, _, body = line.partition(" ")
            answers.append((int(code), body))
    return WrkRun(seconds=seconds, answers=answers, cpu_seconds=usage.ru_utime + usage.ru_stime)
