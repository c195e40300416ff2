"""One machine of the test cluster: an init process holding namespaces of its own.

A :class:`Machine` is ``unshare`` running :mod:`machine_init` in new network, mount and UTS
namespaces (a node's also in a pid namespace: its init is pid 1 there, so killing it takes
the whole node down). Commands run in it through ``nsenter``; the test process's own thread
can step into its network (:func:`entered_network`) to talk to its services as a client
on that machine would. Nothing is named in ``/run/netns``: a namespace lives exactly as
long as its processes, so nothing of it can outlive the machine.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.cluster.machine_init import cgroup_directories

__all__ = [
    "Machine",
    "MachineSpec",
    "entered_network",
    "namespace_members",
    "remove_cgroup_tree",
]

_INIT = Path(__file__).with_name("machine_init.py")
_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class MachineSpec:
    """What a machine is made of: its name, whether it has a pid namespace, its mounts
    (:mod:`machine_init`'s format), its cgroup and its ``/etc/hosts`` lines."""

    hostname: str
    pid_namespace: bool
    mounts: Sequence[Mapping[str, str]] = ()
    cgroup: str | None = None
    hosts: Sequence[str] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


class Machine:
    """A started machine: its init's pid (in the host's pid namespace) and how to reach it."""

    def __init__(self, spec: MachineSpec, workdir: Path) -> None:
        self.spec = spec
        self.name = spec.hostname
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "init.json"
        config.write_text(
            json.dumps(
                {
                    "hostname": spec.hostname,
                    "mounts": [dict(m) for m in spec.mounts],
                    "cgroup": spec.cgroup,
                    "hosts": list(spec.hosts),
                }
            )
        )
        command = ["unshare", "--net", "--mount", "--uts", "--propagation", "private"]
        if spec.pid_namespace:
            command += ["--pid", "--fork", "--mount-proc"]
        self._unshare = subprocess.Popen(
            [*command, sys.executable, str(_INIT), str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self._unshare.stdout is not None
        line = self._unshare.stdout.readline()
        if line.strip() != "ready":
            self._unshare.kill()
            _, errors = self._unshare.communicate(timeout=10)
            raise RuntimeError(f"machine {spec.hostname} did not start: {line}{errors}")
        self._children: list[subprocess.Popen[bytes]] = []
        self.init_pid = self._find_init()
        self.net_inode = os.stat(f"/proc/{self.init_pid}/ns/net").st_ino

    def _find_init(self) -> int:
        if not self.spec.pid_namespace:
            return self._unshare.pid
        children = Path(f"/proc/{self._unshare.pid}/task/{self._unshare.pid}/children")
        return int(children.read_text().split()[0])

    @property
    def alive(self) -> bool:
        return self._unshare.poll() is None

    def nsenter(self, *, workdir: str = "/") -> list[str]:
        """The command prefix that runs a program inside this machine."""
        prefix = ["nsenter", f"--target={self.init_pid}", "--net", "--mount", "--uts"]
        if self.spec.pid_namespace:
            prefix.append("--pid")
        return [*prefix, f"--wd={workdir}", "--"]

    def run(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        timeout: float = 120.0,
        check: bool = True,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``command`` inside the machine and wait for it."""
        done = subprocess.run(
            [*self.nsenter(), *command],
            env=None if env is None else dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            input=input,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{self.name}: {' '.join(command)} exited {done.returncode}:\n"
                f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
            )
        return done

    def popen(
        self, command: Sequence[str], *, env: Mapping[str, str] | None = None, log: Path
    ) -> subprocess.Popen[bytes]:
        """Start ``command`` inside the machine in a session of its own, output to ``log``."""
        with log.open("ab") as output:
            child = subprocess.Popen(
                [*self.nsenter(), *command],
                env=None if env is None else dict(env),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._children.append(child)
        return child

    def wait_listening(self, port: int, *, timeout: float = 30.0) -> None:
        """Until a TCP socket of this machine listens on ``port``."""
        deadline = time.monotonic() + timeout
        while f":{port} " not in self.run(["ss", "-Hltn"]).stdout:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing listens on {self.name}:{port}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL to the init: a node's pid namespace and everything in it end at once."""
        if self.alive:
            os.kill(self.init_pid, signal.SIGKILL)
        self._wait_unshare()

    def stop(self, *, timeout: float = 30.0) -> None:
        """End every process of the machine, then the machine itself.

        A node's init ends its namespace's processes on SIGTERM; the master and the LAN
        have no pid namespace, so their processes are found by their network namespace
        and ended by pid (never by name)."""
        if self.alive and not self.spec.pid_namespace:
            end_members(self.net_inode, exclude={self.init_pid}, timeout=timeout)
        if self.alive:
            os.kill(self.init_pid, signal.SIGTERM)
            try:
                self._unshare.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.init_pid, signal.SIGKILL)
        self._wait_unshare()
        if self.spec.cgroup:
            remove_cgroup_tree(self.spec.cgroup)

    def _wait_unshare(self) -> None:
        try:
            self._unshare.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._unshare.kill()
            self._unshare.wait(timeout=10)
        for child in self._children:  # nsenter ends with what it ran, which ended with the machine
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(timeout=10)
        for stream in (self._unshare.stdout, self._unshare.stderr):
            if stream is not None:
                stream.close()


def namespace_members(net_inode: int) -> list[int]:
    """The pids (host's view) of the processes in the network namespace ``net_inode``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.stat(entry / "ns" / "net").st_ino == net_inode:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def end_members(net_inode: int, *, exclude: set[int], timeout: float) -> None:
    """SIGTERM to every process of the network namespace, SIGKILL to those left."""
    members = [pid for pid in namespace_members(net_inode) if pid not in exclude]
    for pid in members:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [pid for pid in namespace_members(net_inode) if pid not in exclude]
        if not left:
            return
        time.sleep(0.2)
    for pid in namespace_members(net_inode):
        if pid not in exclude:
            _signal(pid, signal.SIGKILL)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def remove_cgroup_tree(name: str) -> None:
    """Remove the machine's cgroups (and the empty ones made under them) in every hierarchy."""
    for directory in cgroup_directories(name, Path("/proc/self/cgroup").read_text()):
        if not directory.is_dir():
            continue
        for _ in range(50):
            try:
                for path in sorted(directory.rglob("*"), key=lambda p: -len(p.parts)):
                    if path.is_dir():
                        path.rmdir()
                directory.rmdir()
                break
            except OSError:
                time.sleep(0.1)


@contextmanager
def entered_network(machine: Machine) -> Iterator[None]:
    """This thread (and the threads and processes it starts) in ``machine``'s network for
    the block: clients made here talk to the machine's services as a local client would."""
    own = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
    target = os.open(f"/proc/{machine.init_pid}/ns/net", os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(own)
        os.close(target)


def _setns(fd: int) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")
