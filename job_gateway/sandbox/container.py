"""Run one job attempt in a container: the trusted side of the sandbox.

The worker calls :func:`run_in_container` with the function's and arguments' bytes (never
unpickled here). It writes the bundle (``config.json`` from :mod:`job_gateway.sandbox.oci`),
starts the OCI runtime (``runc run --keep``) with ``posix_spawn`` so the result and end
pipes land on descriptors 3 and 4, feeds the inputs, reads the result while the function
runs (bounded), waits, reads the memory cgroup's OOM count, and deletes the container,
which kills anything still in its cgroup.

The runtime runs under ``setpriv --pdeathsig KILL``: when the worker's process dies (a
timeout or a cancel kills it), the runtime dies with it, and the runner (pid 1, which asked
for the same) with that, and the kernel empties the pid namespace. What such a death leaves
(the container's state and cgroup) is removed by :func:`sweep_orphans`, which every worker
runs: a container is named after the worker process that started it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from job_gateway.sandbox import runner
from job_gateway.sandbox.cgroups import oom_kills
from job_gateway.sandbox.oci import ContainerLimits, DeviceNode, container_config

__all__ = ["ContainerRun", "ContainerSpec", "run_in_container", "sweep_orphans"]

_log = logging.getLogger(__name__)
_CONTAINER_PREFIX = "gw"
_counter = 0
_counter_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """One container to run: the image's root, who runs it, its limits and devices."""

    runtime: str
    state_dir: Path
    rootfs: Path
    runner_dir: Path
    host_uid: int
    limits: ContainerLimits
    environment: dict[str, str]
    devices: tuple[DeviceNode, ...] = ()
    max_result_bytes: int = 1 << 30


@dataclass(frozen=True, slots=True)
class ContainerRun:
    """How the container's run ended.

    ``header``: the runner's result header (``status``, ``exception_type``, ``message``,
    ``traceback``), None when the function never wrote one (killed, out of memory, the
    container did not start); ``payload``: the pickled result, as bytes; ``exit_code`` /
    ``signal``: how the function's process ended (from pid 1's end record); ``oom_killed``:
    the kernel killed a process of the container for memory; ``error``: why the run gave
    no result, in words.
    """

    header: dict[str, Any] | None
    payload: bytes
    exit_code: int | None
    signal: int | None
    oom_killed: bool
    error: str | None
    started_at: float
    finished_at: float


def run_in_container(
    spec: ContainerSpec,
    *,
    function: bytes,
    arguments: bytes,
    stdout: int,
    stderr: int,
) -> ContainerRun:
    """Run the runner on ``function`` and ``arguments`` in a new container; its stdout and
    stderr go to the given descriptors."""
    name = _container_name()
    bundle = spec.state_dir / "bundles" / name
    bundle.mkdir(parents=True, mode=0o700)
    cgroup = f"gridweave/{name}"
    log = bundle / "runtime.log"
    command, environment = _command(spec, name, bundle, cgroup)
    started = time.time()
    try:
        with _pipes() as (stdin, result, end):
            pid = os.posix_spawnp(
                command[0],
                command,
                environment,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, stdin.reader, 0),
                    (os.POSIX_SPAWN_DUP2, stdout, 1),
                    (os.POSIX_SPAWN_DUP2, stderr, 2),
                    (os.POSIX_SPAWN_DUP2, result.writer, runner.RESULT_FD),
                    (os.POSIX_SPAWN_DUP2, end.writer, runner.END_FD),
                ],
            )
            for pipe in (stdin, result, end):
                pipe.close_child_end()
            feeder = threading.Thread(
                target=_feed, args=(stdin.writer, function, arguments), daemon=True
            )
            feeder.start()
            collected = _collect_result(result.reader, spec.max_result_bytes, pid)
            ended = _read_end(end.reader)
            _, status = os.waitpid(pid, 0)
            feeder.join(timeout=5)
        finished = time.time()
        oom = oom_kills(cgroup) if spec.runtime != "none" else 0
        error = collected.error
        if error is None and collected.header is None:
            error = _why_no_result(ended, os.waitstatus_to_exitcode(status), log)
        return ContainerRun(
            header=collected.header,
            payload=collected.payload,
            exit_code=ended.get("exit_code"),
            signal=ended.get("signal"),
            oom_killed=oom > 0,
            error=error,
            started_at=started,
            finished_at=finished,
        )
    finally:
        if spec.runtime != "none":
            _delete(spec, name)
        shutil.rmtree(bundle, ignore_errors=True)


def _command(
    spec: ContainerSpec, name: str, bundle: Path, cgroup: str
) -> tuple[list[str], dict[str, str]]:
    """The runtime's command line, its environment, and the bundle's ``config.json``.

    Runtime ``none``: the runner as a plain process of the worker's Python (the cost
    baseline of the benchmark; no isolation at all).
    """
    path = os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    if spec.runtime == "none":
        environment = {"PATH": path, "PYTHONPATH": str(spec.runner_dir), **spec.environment}
        return [sys.executable, "-m", "gridweave_runner"], environment
    config = container_config(
        args=["python3", "-m", "gridweave_runner"],
        rootfs=spec.rootfs,
        runner_dir=spec.runner_dir,
        host_uid=spec.host_uid,
        limits=spec.limits,
        environment=spec.environment,
        devices=spec.devices,
    )
    config["linux"]["cgroupsPath"] = cgroup
    (bundle / "config.json").write_text(json.dumps(config))
    command = [
        "setpriv",
        "--pdeathsig",
        "KILL",
        spec.runtime,
        "--root",
        str(_runtime_root(spec.state_dir)),
        "--log",
        str(bundle / "runtime.log"),
        "run",
        "--keep",
        "--bundle",
        str(bundle),
        "--preserve-fds",
        "2",
        name,
    ]
    return command, {"PATH": path}


def sweep_orphans(runtime: str, state_dir: Path) -> list[str]:
    """Kill and delete the containers whose worker process is gone; their names."""
    root = _runtime_root(state_dir)
    if not root.exists():
        return []
    listed = subprocess.run(
        [runtime, "--root", str(root), "list", "--quiet"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    swept = []
    for name in listed.stdout.split():
        owner = _owner_pid(name)
        if owner is None or _alive(owner):
            continue
        subprocess.run(
            [runtime, "--root", str(root), "delete", "--force", name],
            capture_output=True,
            timeout=30,
            check=False,
        )
        shutil.rmtree(state_dir / "bundles" / name, ignore_errors=True)
        swept.append(name)
    return swept


# -- the pipes ------------------------------------------------------------------------------


@dataclass
class _Pipe:
    """A pipe whose ends are closed once each (a second close could hit a reused number)."""

    reader: int
    writer: int
    parent_reads: bool

    def close_child_end(self) -> None:
        if self.parent_reads:
            os.close(self.writer)
            self.writer = -1
        else:
            os.close(self.reader)
            self.reader = -1

    def close(self) -> None:
        for fd in (self.reader, self.writer):
            if fd >= 0:
                os.close(fd)
        self.reader = self.writer = -1


@contextlib.contextmanager
def _pipes() -> Iterator[tuple[_Pipe, _Pipe, _Pipe]]:
    made: list[_Pipe] = []
    try:
        for parent_reads in (False, True, True):
            reader, writer = os.pipe()
            made.append(_Pipe(reader, writer, parent_reads))
        yield made[0], made[1], made[2]
    finally:
        for pipe in made:
            pipe.close()


def _feed(fd: int, function: bytes, arguments: bytes) -> None:
    """Write the two input frames (on a copy of ``fd``: the pipe's owner closes it); a
    runner that died early makes the write fail, and that is all."""
    try:
        with os.fdopen(os.dup(fd), "wb") as stream:
            runner.write_frame(stream, function)
            runner.write_frame(stream, arguments)
    except OSError:
        pass


@dataclass(frozen=True, slots=True)
class _Collected:
    header: dict[str, Any] | None
    payload: bytes
    error: str | None


def _collect_result(fd: int, limit: int, runtime_pid: int) -> _Collected:
    """Read the result frames; one over ``limit`` stops the container (and is an error)."""
    with os.fdopen(os.dup(fd), "rb") as stream:
        try:
            header = json.loads(runner.read_frame(stream, runner.MAX_HEADER_BYTES))
        except ValueError:
            return _Collected(None, b"", None)  # no result: why is found from the end record
        if not isinstance(header, dict) or header.get("status") not in ("ok", "exception"):
            return _Collected(None, b"", "the runner wrote a result header that is not one")
        try:
            payload = runner.read_frame(stream, limit)
        except ValueError as error:
            _stop(runtime_pid)
            return _Collected(None, b"", f"the result could not be read: {error}")
        return _Collected(header, payload, None)


def _read_end(fd: int) -> dict[str, Any]:
    with os.fdopen(os.dup(fd), "rb") as stream:
        try:
            end = json.loads(runner.read_frame(stream, runner.MAX_HEADER_BYTES))
        except ValueError:
            return {}
    return end if isinstance(end, dict) else {}


def _stop(runtime_pid: int) -> None:
    """End the runtime (its pdeathsig'd runner, and so the container, go with it)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(runtime_pid, 9)


def _why_no_result(end: dict[str, Any], runtime_exit: int, log: Path) -> str:
    signal = end.get("signal")
    if signal is not None:
        return f"the function's process was killed by signal {signal}"
    code = end.get("exit_code")
    if code is not None:
        return f"the function's process exited with code {code} before returning"
    return f"the container ended without a result (runtime exit {runtime_exit}){_log_tail(log)}"


def _log_tail(log: Path) -> str:
    """The runtime's last error line, if it logged one."""
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("level") in ("error", "fatal"):
            return f": {str(entry.get('msg', ''))[:300]}"
    return ""


def _delete(spec: ContainerSpec, name: str) -> None:
    subprocess.run(
        [spec.runtime, "--root", str(_runtime_root(spec.state_dir)), "delete", "--force", name],
        capture_output=True,
        timeout=30,
        check=False,
    )


def _runtime_root(state_dir: Path) -> Path:
    return state_dir / "runtime"


def _container_name() -> str:
    """``gw-<worker pid>-<n>``: :func:`sweep_orphans` knows a container's worker by it."""
    global _counter
    with _counter_lock:
        _counter += 1
        return f"{_CONTAINER_PREFIX}-{os.getpid()}-{_counter}-{time.monotonic_ns() % 10**9}"


def _owner_pid(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) < 3 or parts[0] != _CONTAINER_PREFIX or not parts[1].isdigit():
        return None
    return int(parts[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
