"""A job container: the trusted side of the sandbox, which starts, feeds, watches and reaps it.

:class:`Container` writes the bundle (``config.json`` from :mod:`job_gateway.sandbox.oci`),
starts the OCI runtime (``runc run --keep``) with ``posix_spawn`` so the control socket lands
on descriptor 3, and then runs attempts in it one after the other (:meth:`Container.run`):
it sends the attempt's stdout, stderr and result pipe over the socket with the inputs'
bytes (never unpickled here), reads the result while the function runs (bounded), and the
end record. :meth:`Container.clean` says whether it may serve its owner's next attempt:
only pid 1 left in its cgroup and no OOM kill. :meth:`Container.close` deletes it, which
kills anything still in its cgroup.

The runtime runs under ``setpriv --pdeathsig KILL``: when the worker's process dies (a
timeout or a cancel kills it), the runtime dies with it, and the runner (pid 1, which asked
for the same) with that, and the kernel empties the pid namespace. What such a death leaves
(the container's state and cgroup, its veth pair when it had a way out, and what was staged
for it in ``STAGING_DIR``) is removed by
:func:`~job_gateway.sandbox.container_names.sweep_orphans`, which every worker runs: a
container is named after the worker process that started it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from job_gateway.sandbox import runner
from job_gateway.sandbox.cgroups import (
    cgroup_processes,
    oom_kills,
)
from job_gateway.sandbox.container_names import container_name, delete_container, runtime_root
from job_gateway.sandbox.images import hold_image
from job_gateway.sandbox.network import Egress, NetworkLink, attach, release
from job_gateway.sandbox.oci import ContainerLimits, DeviceNode, container_config

__all__ = [
    "Chunk",
    "Container",
    "ContainerRun",
    "ContainerSpec",
    "network_link",
    "runtime_command",
]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """One container: the image's root, who runs it, its limits, devices and environment
    (the GPU variables; what varies per attempt is given to :meth:`Container.run`)."""

    runtime: str
    state_dir: Path
    rootfs: Path
    runner_dir: Path
    host_uid: int
    limits: ContainerLimits
    environment: tuple[tuple[str, str], ...]
    devices: tuple[DeviceNode, ...] = ()
    max_result_bytes: int = 1 << 30
    #: The variables of the image's config (its PATH...), under the sandbox's own.
    image_environment: tuple[tuple[str, str], ...] = ()
    #: The way out (a veth pair of its own, :mod:`job_gateway.sandbox.network`); None:
    #: only a loopback of its own.
    network: Egress | None = None
    #: The job's pip environment on the node (:mod:`job_gateway.sandbox.pip_envs`), mounted
    #: read-only first on its PYTHONPATH after the runner; None: none.
    python_env: Path | None = None
    #: The node's NVIDIA driver files (:mod:`job_gateway.sandbox.driver`), for a container
    #: with NVIDIA GPUs; None: none.
    driver: Path | None = None


@dataclass(frozen=True, slots=True)
class ContainerRun:
    """How one attempt in the container ended.

    ``header``: the runner's result header (``status``, ``exception_type``, ``message``,
    ``traceback``), None when the function never wrote one (killed, out of memory, the
    container did not start); ``payload``: the pickled result, as bytes; ``exit_code`` /
    ``signal``: how the function's process ended (pid 1's end record); ``oom_killed``: the
    kernel killed a process of the container for memory during the attempt; ``error``:
    why the run gave no result, in words; ``runtime_killed``: the run was cut short because
    the runtime itself was killed from outside the worker (a cancel or timeout tearing the
    worker down kills its children first), so what the run did not give says nothing about
    the function.
    """

    header: dict[str, Any] | None
    payload: bytes
    exit_code: int | None
    signal: int | None
    oom_killed: bool
    error: str | None
    started_at: float
    finished_at: float
    #: A chunk's run: each input's header and payload, in order (fewer than the chunk's
    #: inputs when the run was cut short: ``error`` says why).
    results: tuple[tuple[dict[str, Any], bytes], ...] = ()
    runtime_killed: bool = False


@dataclass(frozen=True, slots=True)
class Chunk:
    """A run of a chunk of a map's inputs: how many, and how often an input that raised
    is tried again."""

    items: int
    retries: int = 0


class Container:
    """A running container of one user and image, serving attempts one at a time."""

    def __init__(self, spec: ContainerSpec) -> None:
        self.spec = spec
        self.name = container_name()
        self.bundle = spec.state_dir / "bundles" / self.name
        self.cgroup = f"gridweave/{self.name}"
        self._closed = False
        self._broken = False
        self._stopped = False  # this side killed the runtime (``_stop``)
        self._image_hold = hold_image(spec.rootfs)  # the cache never deletes it meanwhile
        self._env_hold = hold_image(spec.python_env) if spec.python_env is not None else None
        self._link: NetworkLink | None = None
        self.bundle.mkdir(parents=True, mode=0o700)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._control = ours
        try:
            self._link = network_link(spec, self.name)
            command, environment = runtime_command(
                spec, self.name, self.bundle, self.cgroup, network=self._link
            )
            log = os.open(self.bundle / "container.log", os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                self._pid = os.posix_spawnp(
                    command[0],
                    command,
                    environment,
                    file_actions=[
                        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                        (os.POSIX_SPAWN_DUP2, log, 1),
                        (os.POSIX_SPAWN_DUP2, log, 2),
                        (os.POSIX_SPAWN_DUP2, theirs.fileno(), runner.CONTROL_FD),
                    ],
                )
            finally:
                os.close(log)
        except BaseException:
            ours.close()
            shutil.rmtree(self.bundle, ignore_errors=True)
            self._let_go_of_image()
            self._let_go_of_link()
            raise
        finally:
            theirs.close()

    def run(
        self,
        *,
        function: bytes,
        arguments: bytes,
        environment: dict[str, str],
        stdout: int,
        stderr: int,
        chunk: Chunk | None = None,
    ) -> ContainerRun:
        """Run one attempt (or, with ``chunk``, the function on each input of a chunk: the
        arguments are a pickled list of ``(args, kwargs)``); its stdout and stderr go to the
        given descriptors."""
        started = time.time()
        ooms = oom_kills(self.cgroup) if self.spec.runtime != "none" else 0
        reader, writer = os.pipe()
        try:
            try:
                socket.send_fds(self._control, [b"A"], [stdout, stderr, writer])
                os.close(writer)
                writer = -1
                request: dict[str, Any] = {"environment": environment}
                if chunk is not None:
                    request["chunk"] = {"retries": chunk.retries}
                for frame in (json.dumps(request).encode(), function, arguments):
                    runner.write_frame(self._control.fileno(), frame)
            except OSError as gone:
                self._broken = True
                return self._no_result(started, ooms, f"the container is gone ({gone})")
            count = 1 if chunk is None else chunk.items
            collected = _collect_results(reader, count, self.spec.max_result_bytes, self._stop)
            ended = self._read_end()
        finally:
            os.close(reader)
            if writer >= 0:
                os.close(writer)
        oom = self.spec.runtime != "none" and oom_kills(self.cgroup) > ooms
        error = collected.error
        whole = len(collected.results) == count
        if error is None and not whole:
            error = self._why_no_result(ended)
        if not whole or collected.error is not None:
            self._broken = self._broken or oom
        first = collected.results[0] if collected.results and chunk is None else (None, b"")
        killed = not whole and not ended and self._runtime_killed()
        return ContainerRun(
            header=first[0],
            payload=first[1],
            exit_code=ended.get("exit_code"),
            signal=ended.get("signal"),
            oom_killed=oom,
            error=error,
            started_at=started,
            finished_at=time.time(),
            results=tuple(collected.results) if chunk is not None else (),
            runtime_killed=killed,
        )

    def clean(self) -> bool:
        """Whether it may serve its owner's next attempt: alive, no OOM kill, and nothing
        left running in it but the runner (pid 1)."""
        if self._closed or self._broken:
            return False
        if self.spec.runtime == "none":
            return os.waitpid(self._pid, os.WNOHANG) == (0, 0)
        return cgroup_processes(self.cgroup) == 1

    def close(self) -> None:
        """Delete the container (killing whatever runs in it) and its bundle."""
        if self._closed:
            return
        self._closed = True
        self._control.close()
        if self.spec.runtime != "none":
            delete_container(self.spec.runtime, self.spec.state_dir, self.name)
        else:
            self._stop()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)
        shutil.rmtree(self.bundle, ignore_errors=True)
        self._let_go_of_image()
        self._let_go_of_link()

    # -- helpers ------------------------------------------------------------------------

    def _let_go_of_link(self) -> None:
        if self._link is not None:
            release(self.spec.state_dir, self._link)
            self._link = None

    def _let_go_of_image(self) -> None:
        if self._image_hold is not None:
            os.close(self._image_hold)
            self._image_hold = None
        if self._env_hold is not None:
            os.close(self._env_hold)
            self._env_hold = None

    def _read_end(self) -> dict[str, Any]:
        try:
            end = json.loads(runner.read_frame(self._control.fileno(), runner.MAX_HEADER_BYTES))
        except (ValueError, OSError):
            self._broken = True
            return {}
        return end if isinstance(end, dict) else {}

    def _runtime_killed(self) -> bool:
        """The runtime's process ended by a signal this side did not send (reaped here).

        Asked once the runner is gone without an end record: a killed runtime is what took
        the runner with it, so it has ended by then; a short wait covers the kernel's order.
        """
        deadline = time.monotonic() + 0.5
        while True:
            try:
                pid, status = os.waitpid(self._pid, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid != 0:
                self._broken = True
                return os.WIFSIGNALED(status) and not self._stopped
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def _stop(self) -> None:
        """End the runtime (its pdeathsig'd runner, and so the container, go with it)."""
        self._broken = True
        self._stopped = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._pid, 9)

    def _no_result(self, started: float, ooms: int, error: str) -> ContainerRun:
        oom = self.spec.runtime != "none" and oom_kills(self.cgroup) > ooms
        return ContainerRun(None, b"", None, None, oom, error, started, time.time())

    def _why_no_result(self, end: dict[str, Any]) -> str:
        signal = end.get("signal")
        if signal is not None:
            return f"the function's process was killed by signal {signal}"
        code = end.get("exit_code")
        if code is not None:
            return f"the function's process exited with code {code} before returning"
        return f"the container ended without a result{self._log_tail()}"

    def _log_tail(self) -> str:
        """The container's last words (the runtime's error, if it could not start it)."""
        try:
            text = (self.bundle / "container.log").read_text(errors="replace").strip()
        except OSError:
            return ""
        return f": {text.splitlines()[-1][:300]}" if text else ""


def network_link(spec: ContainerSpec, name: str) -> NetworkLink | None:
    """The veth pair of container ``name`` when ``spec`` gives it a way out (the image's
    ``/etc/resolv.conf`` replaced only where it is a file: a bind cannot go through a link
    out of the image, nor make a file in its read-only root)."""
    if spec.network is None or spec.runtime == "none":
        return None
    link = attach(spec.state_dir, spec.network, name)
    resolv = spec.rootfs / "etc" / "resolv.conf"
    if resolv.is_symlink() or not resolv.is_file():
        link = dataclasses.replace(link, resolv_conf=None)
    return link


def runtime_command(
    spec: ContainerSpec,
    name: str,
    bundle: Path,
    cgroup: str,
    *,
    module: str = "gridweave_runner",
    args: Sequence[str] = runner.SCRATCH_DIRS,
    mounts: Sequence[dict[str, Any]] = (),
    network: NetworkLink | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The runtime's command line, its environment, and the bundle's ``config.json``: the
    container runs ``python3 -m <module> <args>`` (the job runner by default) as its pid 1,
    with ``mounts`` besides those of every container.

    Runtime ``none``: the module as a plain process of the worker's Python (the cost
    baseline of the benchmark; no isolation at all).
    """
    path = os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    if spec.runtime == "none":
        environment = {"PATH": path, "PYTHONPATH": str(spec.runner_dir), **dict(spec.environment)}
        return [sys.executable, "-m", module], environment
    config = container_config(
        args=["python3", "-m", module, *args],
        rootfs=spec.rootfs,
        runner_dir=spec.runner_dir,
        host_uid=spec.host_uid,
        limits=spec.limits,
        environment=dict(spec.environment),
        devices=spec.devices,
        hostname=name,
        image_environment=dict(spec.image_environment),
        network=network,
        python_env=spec.python_env,
        driver=spec.driver,
    )
    config["mounts"].extend(mounts)
    config["linux"]["cgroupsPath"] = cgroup
    (bundle / "config.json").write_text(json.dumps(config))
    command = [
        "setpriv",
        "--pdeathsig",
        "KILL",
        spec.runtime,
        "--root",
        str(runtime_root(spec.state_dir)),
        "run",
        "--keep",
        "--bundle",
        str(bundle),
        "--preserve-fds",
        "1",
        name,
    ]
    return command, {"PATH": path}


@dataclass(frozen=True, slots=True)
class _Collected:
    results: list[tuple[dict[str, Any], bytes]]
    error: str | None


def _collect_results(fd: int, count: int, limit: int, stop: Any) -> _Collected:
    """Read ``count`` results' frames (header, payload); payloads over ``limit`` in all stop
    the container (and are an error). Fewer when the run was cut short."""
    results: list[tuple[dict[str, Any], bytes]] = []
    left = limit
    for _ in range(count):
        try:
            header = json.loads(runner.read_frame(fd, runner.MAX_HEADER_BYTES))
        except ValueError:
            return _Collected(results, None)  # cut short: why is found from the end record
        if not isinstance(header, dict) or header.get("status") not in ("ok", "exception"):
            return _Collected(results, "the runner wrote a result header that is not one")
        try:
            payload = runner.read_frame(fd, left)
        except ValueError as error:
            stop()
            return _Collected(results, f"the result could not be read: {error}")
        left -= len(payload)
        results.append((header, payload))
    return _Collected(results, None)
