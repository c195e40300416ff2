"""The first process of one machine of the test cluster (the standard library only).

Started by ``unshare`` in new network, mount and UTS namespaces (and for a node a pid
namespace, where it is pid 1), it makes the machine's private mounts, takes the hostname,
moves itself into cgroups of its own (so what the machine starts is counted and found
there), brings the loopback up, prints ``ready`` and then reaps orphans until it is told
to stop. On SIGTERM, as a pid namespace's init, it sends SIGTERM to every process of the
namespace, waits a little and exits, which makes the kernel kill whatever is left; without
a pid namespace (the master, the LAN) it only exits, and the harness ends the machine's
processes by their network namespace.

Usage: ``machine_init.py CONFIG.json``, where the file holds ``hostname``, ``mounts`` (in
order: ``{"type": "tmpfs", "target", "options"}``, ``{"type": "bind", "source",
"target"}``, ``{"type": "overlay", "target", "upper", "work"}``), ``cgroup`` (a name, or
null) and ``hosts`` (lines for ``/etc/hosts``, written when ``/etc`` is an overlay).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_CGROUP_ROOT = Path("/sys/fs/cgroup")
_STOP_GRACE_S = 5.0
_stopping = False


def _mount(spec: dict[str, Any]) -> None:
    target = spec["target"]
    kind = spec["type"]
    if kind == "tmpfs":
        command = ["mount", "-t", "tmpfs", "-o", spec.get("options", "mode=755"), "tmpfs", target]
    elif kind == "bind":
        Path(target).mkdir(parents=True, exist_ok=True)  # a path kept in a new /tmp
        command = ["mount", "--bind", spec["source"], target]
    elif kind == "overlay":
        options = f"lowerdir={target},upperdir={spec['upper']},workdir={spec['work']}"
        command = ["mount", "-t", "overlay", "-o", options, "overlay", target]
    else:
        raise ValueError(f"unknown mount type {kind!r}")
    subprocess.run(command, check=True)


def cgroup_directories(name: str, proc_cgroup: str) -> list[Path]:
    """The directory of cgroup ``name`` under this process's cgroup in every hierarchy."""
    found = []
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            unified = _CGROUP_ROOT / "unified"
            base = unified if unified.is_dir() else _CGROUP_ROOT
        else:
            base = _CGROUP_ROOT / controllers.split(",")[0].removeprefix("name=")
        found.append(base / path.lstrip("/") / name)
    return found


def _enter_cgroups(name: str) -> None:
    for directory in cgroup_directories(name, Path("/proc/self/cgroup").read_text()):
        directory.mkdir(exist_ok=True)
        for inherited in ("cpuset.cpus", "cpuset.mems"):  # v1 cpuset: empty refuses tasks
            mine = directory / inherited
            if mine.exists() and not mine.read_text().strip():
                mine.write_text((directory.parent / inherited).read_text())
        (directory / "cgroup.procs").write_text(str(os.getpid()))


def _on_term(signum: int, frame: object) -> None:
    global _stopping
    _stopping = True


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _stop_namespace() -> None:
    """As a pid namespace's init: every other process of it gets SIGTERM, then time."""
    try:
        os.kill(-1, signal.SIGTERM)  # in a pid namespace: its processes only
    except ProcessLookupError:
        return
    deadline = time.monotonic() + _STOP_GRACE_S
    while time.monotonic() < deadline:
        _reap()
        if not any(entry.name.isdigit() and entry.name != "1" for entry in Path("/proc").iterdir()):
            return
        time.sleep(0.1)


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if config.get("cgroup"):
        _enter_cgroups(config["cgroup"])
    for spec in config.get("mounts", []):
        _mount(spec)
    hostname = config["hostname"]
    socket.sethostname(hostname)
    if any(spec["target"] == "/etc" for spec in config.get("mounts", [])):
        Path("/etc/hostname").write_text(hostname + "\n")
        hosts = ["127.0.0.1 localhost", f"127.0.1.1 {hostname}", *config.get("hosts", [])]
        Path("/etc/hosts").write_text("\n".join(hosts) + "\n")
        # no name server reaches this machine: an unknown name fails at once, not in 5 s
        Path("/etc/resolv.conf").write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    pid_namespace = os.getpid() == 1
    print("ready", flush=True)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    while not _stopping:
        _reap()
        time.sleep(0.2)
    if pid_namespace:
        _stop_namespace()


if __name__ == "__main__":
    main()
