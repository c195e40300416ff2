"""The all-in-one's child processes: started, awaited, watched, and all stopped on the way out.

Each service runs in a session of its own (a terminal's Ctrl-C reaches only the
all-in-one, which then stops them in reverse order: SIGTERM, SIGKILL after a grace), with
its output appended to ``<state_dir>/logs/<name>.log``. A service that exits on its own is
started again (services keep no state of their own), at most a few times a minute.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

__all__ = ["ServiceProcess", "StartFailed", "Supervisor"]

_log = logging.getLogger(__name__)
_STOP_GRACE_S = 20.0
_RESTART_WINDOW_S = 60.0
_MAX_RESTARTS_PER_WINDOW = 3
_LOG_TAIL_CHARS = 3000


class StartFailed(RuntimeError):
    """A service exited or did not answer ``/healthz`` in time."""


@dataclass
class ServiceProcess:
    """One child: how to start it, where it logs, and the process while it runs."""

    name: str
    command: list[str]
    env: dict[str, str]
    log: Path
    health_url: str | None
    process: subprocess.Popen[bytes] | None = None
    restarts: list[float] = field(default_factory=list)
    given_up: bool = False

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                self.command,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-_LOG_TAIL_CHARS:]
        except OSError:
            return ""

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait(timeout=_STOP_GRACE_S)


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


class Supervisor:
    """Starts services wave by wave, restarts the ones that die, stops them all at the end."""

    def __init__(self, log_dir: Path, *, base_env: Mapping[str, str] | None = None) -> None:
        self.log_dir = log_dir
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.children: list[ServiceProcess] = []

    def add(
        self,
        name: str,
        package: str,
        env: Mapping[str, str],
        *,
        health_url: str | None,
        args: Sequence[str] = (),
    ) -> ServiceProcess:
        """A child running ``python -m <package> <args>`` (not started yet)."""
        child = ServiceProcess(
            name=name,
            command=[sys.executable, "-m", package, *args],
            env={**self.base_env, **env},
            log=self.log_dir / f"{name}.log",
            health_url=health_url,
        )
        self.children.append(child)
        return child

    def start_wave(
        self,
        wave: list[ServiceProcess],
        *,
        timeout_s: float,
        on_ready: Callable[[ServiceProcess], None] = lambda _: None,
    ) -> None:
        """Start every child of ``wave``, then wait until each answers (or fail naming it)."""
        for child in wave:
            child.start()
        pending = list(wave)
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=2.0) as http:
            while pending:
                for child in list(pending):
                    if not child.running():
                        raise StartFailed(
                            f"{child.name} exited while starting; {child.log}:\n{child.log_tail()}"
                        )
                    if _healthy(http, child.health_url):
                        pending.remove(child)
                        on_ready(child)
                if pending and time.monotonic() > deadline:
                    names = ", ".join(child.name for child in pending)
                    raise StartFailed(f"no answer from {names} after {timeout_s:.0f} s")
                if pending:
                    time.sleep(0.2)

    def watch(self, report: Callable[[str], None]) -> None:
        """Start again each child that exited; a child failing too often is left stopped."""
        now = time.monotonic()
        for child in self.children:
            if child.process is None or child.running() or child.given_up:
                continue
            child.restarts = [t for t in child.restarts if now - t < _RESTART_WINDOW_S]
            if len(child.restarts) >= _MAX_RESTARTS_PER_WINDOW:
                report(f"{child.name} keeps exiting; left stopped (see {child.log})")
                child.given_up = True
                continue
            report(f"{child.name} exited ({child.process.returncode}); starting it again")
            child.restarts.append(now)
            child.start()

    def stop_all(self) -> None:
        """Stop every child, the last started first."""
        for child in reversed(self.children):
            try:
                child.stop()
            except Exception:  # keep stopping the others
                _log.exception("stopping %s failed", child.name)


def _healthy(http: httpx.Client, url: str | None) -> bool:
    if url is None:
        return True
    try:
        return http.get(url).status_code == 200
    except httpx.HTTPError:
        return False
