"""``gridweave up`` as a user runs it: a real process in a state directory, stopped with Ctrl-C.

:class:`AllInOneProcess` starts ``python -m gridweave_cli up`` with its own state
directory, config file and a port offset whose ports are all free, reads its console, and
on exit sends SIGINT and checks that no process of that state directory is left.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType, TracebackType

import cloudpickle
import pytest

from gridweave_allinone.settings import DEFAULT_PORTS
from gridweave_clients.platform import PlatformClient
from gridweave_clients.platform.models import RegisteredUserResponse
from gridweave_runtime.local_ray import ray_temp_dir

__all__ = [
    "AllInOneProcess",
    "functions_by_value",
    "leftover_processes",
    "reachable_workdir",
    "sign_up_from_console",
]

_START_TIMEOUT_S = 240.0
_STOP_TIMEOUT_S = 120.0
_READY_LINE = "Ctrl-C stops every process started here."


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


#: Offsets that keep every standard port (3000 to 30501) below the kernel's ephemeral range
#: (32768 and up: a client's connection may take one of those ports between the check
#: and the service's bind) and below Ray's worker ports (10002 to 19999).
_OFFSETS = range(100, 1100, 10)


def free_port_offset() -> int:
    """An offset under which every standard port of the all-in-one is free now."""
    for _ in range(200):
        offset = random.choice(_OFFSETS)
        if all(_free(port + offset) for port in DEFAULT_PORTS.values()):
            return offset
    raise RuntimeError("no free block of ports for the all-in-one")


def leftover_processes(state_dir: Path) -> list[str]:
    """Processes whose command line or environment names ``state_dir`` (or its Ray)."""
    markers = [str(state_dir).encode(), str(ray_temp_dir(state_dir)).encode()]
    own = os.getpid()
    found: list[str] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue
        if command and any(m in command or m in environment for m in markers):
            shown = command.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry.name}: {shown}")
    return found


class AllInOneProcess:
    """One run of ``gridweave up`` over ``workdir/state``; its console kept in ``output``."""

    def __init__(
        self,
        workdir: Path,
        *,
        port_offset: int | None = None,
        command_prefix: Sequence[str] = (),
        environment: Mapping[str, str] | None = None,
    ) -> None:
        """``command_prefix`` runs it elsewhere (``nsenter`` into a test cluster's master);
        ``environment`` adds settings of the services."""
        self.workdir = workdir
        self.command_prefix = list(command_prefix)
        self.extra_environment = dict(environment or {})
        self.state_dir = workdir / "state"
        self.config_file = workdir / "config.toml"
        self.port_offset = free_port_offset() if port_offset is None else port_offset
        self.output = ""
        self._lines_changed = threading.Condition()
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def url(self, service: str) -> str:
        return f"http://127.0.0.1:{DEFAULT_PORTS[service] + self.port_offset}"

    def __enter__(self) -> AllInOneProcess:
        environment = {
            key: value
            for key, value in os.environ.items()
            if key != "RAY_ADDRESS" and not key.startswith("GRIDWEAVE_")
        }
        environment |= {
            "GRIDWEAVE_STATE_DIR": str(self.state_dir),
            "GRIDWEAVE_PORT_OFFSET": str(self.port_offset),
            "GRIDWEAVE_CONFIG": str(self.config_file),
            "COLUMNS": "250",  # one console line per report, for the test to read
        }
        environment |= self.extra_environment
        self._process = subprocess.Popen(
            [*self.command_prefix, sys.executable, "-m", "gridweave_cli", "up"],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            self.wait_for(re.escape(_READY_LINE), timeout_s=_START_TIMEOUT_S)
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            with self._lines_changed:
                self.output += line
                self._lines_changed.notify_all()

    def wait_for(self, pattern: str, *, timeout_s: float) -> re.Match[str]:
        """The first match of ``pattern`` in the console; fails when the process ends first."""
        deadline = time.monotonic() + timeout_s
        with self._lines_changed:
            while True:
                found = re.search(pattern, self.output)
                if found is not None:
                    return found
                assert self._process is not None
                if self._process.poll() is not None:
                    raise AssertionError(f"gridweave up exited before {pattern!r}:\n{self.output}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"no {pattern!r} after {timeout_s} s:\n{self.output}")
                self._lines_changed.wait(timeout=0.5)

    def _stop(self) -> None:
        """Ctrl-C, then wait for the end; only if it hangs, SIGKILL of everything it started
        (its services, Ray and PostgreSQL run outside its process group: each is found by
        the state directory it names, ``leftover_processes``)."""
        process = self._process
        try:
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=30)
                    for line in leftover_processes(self.state_dir):
                        with suppress(ProcessLookupError):
                            os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
                    raise AssertionError(
                        f"gridweave up did not stop on Ctrl-C:\n{self.output}"
                    ) from None
        finally:
            self._close_output()

    def _close_output(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self._process is not None and self._process.stdout is not None:
            self._process.stdout.close()

    @property
    def returncode(self) -> int | None:
        """The exit status once stopped (``None`` while it runs)."""
        return None if self._process is None else self._process.poll()


@contextmanager
def reachable_workdir(prefix: str) -> Iterator[Path]:
    """A directory of its own under /tmp, not pytest's: the embedded PostgreSQL runs as
    another user when the tests run as root, and must reach its data through the parents."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def functions_by_value(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> Iterator[None]:
    """No SDK configuration leaks in; ``module``'s functions travel by value, as a script's."""
    monkeypatch.setattr("gridweave._config._overrides", {})
    monkeypatch.delenv("GRIDWEAVE_URL", raising=False)
    monkeypatch.delenv("GRIDWEAVE_API_KEY", raising=False)
    cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(module)


def sign_up_from_console(platform: AllInOneProcess, email: str) -> RegisteredUserResponse:
    """The faucet's sign-up with the code the all-in-one prints on its console."""
    with PlatformClient(platform.url("platform")) as anonymous:
        assert anonymous.sign_up(email).delivery == "outbox"
        code = platform.wait_for(
            rf"mail to {email}: Your Gridweave verification code is (\d+)", timeout_s=30
        ).group(1)
        return anonymous.verify_sign_up(email, code)
