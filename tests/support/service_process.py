"""A service run as its own process, the way an operator runs it (``python -m <package>``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.http_server import free_port

__all__ = ["running_service_process", "service_process", "stop_process", "thread_niceness"]

_START_TIMEOUT_S = 90.0


@contextmanager
def service_process(
    package: str, env: Mapping[str, str], *, prefix: str, log: Path
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``python -m <package>`` on a free loopback port; yields (URL, the process) once
    ``/healthz`` answers 200, and stops it after (unless the test already ended it)."""
    port = free_port()
    environment = {
        **os.environ,
        **env,
        f"{prefix}HOST": "127.0.0.1",
        f"{prefix}PORT": str(port),
    }
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", package], env=environment, stdout=output, stderr=output
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{package} exited: {log.read_text(errors='replace')}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"{package} did not start: {log.read_text(errors='replace')}")
            time.sleep(0.1)
        yield url, process
    finally:
        stop_process(process)


def stop_process(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM (unless it already ended), SIGKILL after 30 s; its exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait(timeout=10)


@contextmanager
def running_service_process(
    package: str, env: Mapping[str, str], *, prefix: str, log: Path
) -> Iterator[tuple[str, int]]:
    """``python -m <package>`` on a free loopback port; yields (URL, port), stops it after."""
    with service_process(package, env, prefix=prefix, log=log) as (url, _process):
        yield url, int(url.rsplit(":", 1)[1])


def thread_niceness(pid: int) -> set[int]:
    """The niceness of each thread of process ``pid`` (Linux keeps one per thread)."""
    niceness = set()
    for thread in os.listdir(f"/proc/{pid}/task"):
        try:
            niceness.add(os.getpriority(os.PRIO_PROCESS, int(thread)))
        except ProcessLookupError:  # ended since it was listed
            continue
    return niceness
