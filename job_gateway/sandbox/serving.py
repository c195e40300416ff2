"""An endpoint replica's container: the trusted side, which starts, waits for, and deletes it.

:class:`ServingContainer` starts the serving runner (:mod:`job_gateway.sandbox.serve_runner`)
as pid 1 of a container built like a job's (:mod:`job_gateway.sandbox.oci`: the owner's uid,
no network but its own loopback, the image read-only, limits, only the allocated GPUs),
plus one read-write mount: a directory of the host at ``/run/gridweave``, owned by the
container's user, where the runner listens on ``serve.sock``. The replica speaks HTTP to
that socket (:attr:`ServingContainer.socket_path`) and nothing else reaches the container.

What it serves: the user's class (``kind="class"``: the pickled bytes go over the control
socket, unread here) or a command's server (``kind="command"``: the image's command, or the
transformers mode's server, given ``PORT``). ``mounts`` adds binds of the node's directories
(a model, read-only) at mount points the runner's directory has. The container's stdout and
stderr are the replica's own (Ray's replica logs). :meth:`wait_ready` returns once the
socket answers HTTP, or raises :class:`ServingFailed` with why (the class's constructor
raised, the command exited, the runtime could not start it, or the time ran out). The
runtime runs under ``setpriv --pdeathsig KILL``, so a replica that dies takes its container
with it; the orphan sweep of the job workers removes what is left (the name carries the
replica's pid).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from job_gateway.sandbox import runner, serve_runner
from job_gateway.sandbox.container import ContainerSpec, runtime_command
from job_gateway.sandbox.container_names import container_name, delete_container
from job_gateway.sandbox.images import hold_image

__all__ = ["ServingContainer", "ServingFailed"]

Kind = Literal["class", "command"]
#: The port the image's own server is given (``PORT``), inside the container's loopback.
DEFAULT_PORT = 8000
_PROBE_TIMEOUT_SECONDS = 2.0


class ServingFailed(RuntimeError):
    """The container did not come to serve; the message says why."""


class ServingContainer:
    """A running container serving one endpoint replica on a Unix socket."""

    def __init__(
        self,
        spec: ContainerSpec,
        *,
        kind: Kind,
        program: bytes = b"",
        command: Sequence[str] = (),
        port: int = DEFAULT_PORT,
        environment: Mapping[str, str] | None = None,
        mounts: Sequence[Mapping[str, Any]] = (),
        stdout: int = 1,
        stderr: int = 2,
    ) -> None:
        if kind == "command" and not command:
            raise ServingFailed("the image names no command to serve with (ENTRYPOINT or CMD)")
        self.spec = spec
        self.kind = kind
        self.mounts = [dict(mount) for mount in mounts]
        self.name = container_name()
        self.bundle = spec.state_dir / "bundles" / self.name
        self.serve_dir = self.bundle / "serve"
        self._closed = False
        self._ended: dict[str, int | None] | None = None
        self._image_hold = hold_image(spec.rootfs)  # the caches never delete them meanwhile
        self._env_hold = hold_image(spec.python_env) if spec.python_env is not None else None
        self.bundle.mkdir(parents=True, mode=0o700)
        self.serve_dir.mkdir(mode=0o700)
        if spec.runtime != "none":
            os.chown(self.serve_dir, spec.host_uid, spec.host_uid)  # only its user writes it
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._control = ours
        try:
            self._pid = self._spawn(theirs.fileno(), stdout, stderr)
            header = {
                "kind": kind,
                "command": list(command),
                "port": port,
                "environment": dict(environment or {}),
            }
            runner.write_frame(ours.fileno(), json.dumps(header).encode())
            runner.write_frame(ours.fileno(), program)
        except BaseException:
            self.close()
            raise
        finally:
            theirs.close()

    @property
    def socket_path(self) -> Path:
        """The Unix socket the replica sends HTTP requests to."""
        return self.serve_dir / serve_runner.SOCKET_NAME

    def wait_ready(self, timeout: float) -> None:
        """Return once the container answers HTTP on its socket.

        Raises:
            ServingFailed: it ended first (the message: the class's error, or how the
                command ended, or the runtime's last words), or ``timeout`` passed.
        """
        deadline = time.monotonic() + timeout
        path = serve_runner.READY_PATH if self.kind == "class" else "/"
        while True:
            failed = self._failure()
            if failed is not None:
                raise ServingFailed(failed)
            if self.socket_path.exists() and self._answers(path):
                return
            if time.monotonic() > deadline:
                raise ServingFailed(f"it did not answer within {timeout:.0f} s")
            time.sleep(0.05)

    def serving(self) -> bool:
        """Whether it still runs (its served process has not ended)."""
        return not self._closed and self._end() is None

    def close(self) -> None:
        """Delete the container (killing whatever runs in it) and its bundle."""
        if self._closed:
            return
        self._closed = True
        self._control.close()
        if self.spec.runtime != "none":
            delete_container(self.spec.runtime, self.spec.state_dir, self.name)
        elif hasattr(self, "_pid"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, 9)
        if hasattr(self, "_pid"):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
        shutil.rmtree(self.bundle, ignore_errors=True)
        for hold in (self._image_hold, self._env_hold):
            if hold is not None:
                os.close(hold)
        self._image_hold = self._env_hold = None

    # -- helpers ------------------------------------------------------------------------

    def _spawn(self, control: int, stdout: int, stderr: int) -> int:
        mount = {
            "destination": serve_runner.SERVE_DIR,
            "type": "bind",
            "source": str(self.serve_dir),
            "options": ["rbind", "rw", "nosuid", "nodev", "noexec"],
        }
        command, environment = runtime_command(
            self.spec,
            self.name,
            self.bundle,
            f"gridweave/{self.name}",
            module="gridweave_serve",
            args=(),
            mounts=[mount, *self.mounts],
        )
        if self.spec.runtime == "none":  # the benchmark's baseline: the directory as it is
            environment[serve_runner.SERVE_DIR_VARIABLE] = str(self.serve_dir)
        log = os.open(self.bundle / "container.log", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            return os.posix_spawnp(
                command[0],
                command,
                environment,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, stdout if stdout >= 0 else log, 1),
                    (os.POSIX_SPAWN_DUP2, stderr if stderr >= 0 else log, 2),
                    (os.POSIX_SPAWN_DUP2, control, runner.CONTROL_FD),
                ],
            )
        finally:
            os.close(log)

    def _answers(self, path: str) -> bool:
        """Whether an HTTP request to ``path`` on the socket gets an HTTP answer."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(_PROBE_TIMEOUT_SECONDS)
                probe.connect(str(self.socket_path))
                probe.sendall(f"GET {path} HTTP/1.0\r\nHost: replica\r\n\r\n".encode())
                return probe.recv(5) == b"HTTP/"
        except OSError:
            return False

    def _end(self) -> dict[str, int | None] | None:
        """How the served process ended (pid 1's record), None while it runs."""
        if self._ended is not None:
            return self._ended
        try:
            done, _ = os.waitpid(self._pid, os.WNOHANG)
        except ChildProcessError:
            done = self._pid
        if done == 0:
            return None
        self._ended = {"exit_code": None, "signal": None}
        with contextlib.suppress(ValueError, OSError):
            self._control.setblocking(False)
            end = json.loads(runner.read_frame(self._control.fileno(), runner.MAX_HEADER_BYTES))
            if isinstance(end, dict):
                self._ended = {key: end.get(key) for key in ("exit_code", "signal")}
        return self._ended

    def _failure(self) -> str | None:
        """Why it will not serve, once that is known; None while it may still."""
        failed = self.serve_dir / serve_runner.FAILED_NAME
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(failed.read_text()[: 1 << 16])
            if isinstance(record, dict):
                return str(record.get("message", "the class could not be loaded"))[:2000]
        end = self._end()
        if end is None:
            return None
        if end.get("signal") is not None:
            return f"its process was killed by signal {end['signal']}"
        if end.get("exit_code") is not None:
            what = "the image's command" if self.kind == "command" else "the class's server"
            return f"{what} exited with code {end['exit_code']}"
        return f"the container ended before serving{self._log_tail()}"

    def _log_tail(self) -> str:
        try:
            text = (self.bundle / "container.log").read_text(errors="replace").strip()
        except OSError:
            return ""
        return f": {text.splitlines()[-1][:300]}" if text else ""
