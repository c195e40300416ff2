"""What a test cluster could leave on the host, read before and after it ran.

The host is shared with other tests running at the same time (their job containers add
iptables rules and veth pairs of their own), so an exact before/after diff would blame the
cluster for their work. What is compared is what this cluster's stack could make: iptables
rules other than the job sandbox's ``GW-EGRESS`` chains, links named as the cluster names
them (``br0``, ``wg0``, ``docker0``, ``to-*``), entries of ``/run`` that WireGuard, Docker,
containerd or the stand-ins make, files the join scripts write under ``/etc``, mounts,
cgroups and processes naming the cluster's directory or id.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.cluster.machine import namespace_members

__all__ = ["HostSnapshot", "host_leaks", "host_snapshot"]

_RUN_MARKS = re.compile(r"wireguard|docker|containerd|gridweave|k3s|rancher|runc")
_LINK_NAMES = re.compile(r"^(br0|wg0|docker0|to-.*)$")
_ETC_FILES = (
    "wireguard/wg0.conf",
    "rancher/k3s/config.yaml",
    "systemd/system/gridweave-heartbeat.service",
    "gridweave-standin",
    "docker/daemon.json",
)
_COUNTERS = re.compile(r"\[\d+:\d+\]")


@dataclass(frozen=True)
class HostSnapshot:
    """The host's state that a cluster could change."""

    iptables: frozenset[str]
    run: frozenset[str]
    links: frozenset[str]
    etc: frozenset[str]


def host_snapshot() -> HostSnapshot:
    """The host now (its own namespaces: this process's)."""
    return HostSnapshot(
        iptables=frozenset(_iptables_rules()),
        run=frozenset(_run_entries()),
        links=frozenset(_link_names()),
        etc=frozenset(name for name in _ETC_FILES if (Path("/etc") / name).exists()),
    )


def host_leaks(
    before: HostSnapshot, *, workdir: Path, cluster_id: str, net_inodes: list[int]
) -> list[str]:
    """Everything the cluster left behind (empty when it cleaned up)."""
    after = host_snapshot()
    found: list[str] = []
    found += [
        f"iptables rule {rule}"
        for rule in sorted(after.iptables - before.iptables)
        if "GW-EGRESS" not in rule
    ]
    found += [f"/run entry {entry}" for entry in sorted(after.run - before.run)]
    found += [f"host link {name}" for name in sorted(after.links - before.links)]
    found += [f"/etc/{name}" for name in sorted(after.etc - before.etc)]
    markers = (str(workdir), cluster_id)
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    found += [f"mount {line}" for line in mounts if any(m in line for m in markers)]
    found += [f"cgroup {path}" for path in _cgroups(f"gwc-{cluster_id}")]
    for inode in net_inodes:
        found += [
            f"process {pid} in a cluster network namespace" for pid in namespace_members(inode)
        ]
    found += [f"process {line}" for line in _processes_naming(str(workdir))]
    return found


def _iptables_rules() -> list[str]:
    rules = []
    for tool in ("iptables-save", "ip6tables-save"):
        try:
            done = subprocess.run([tool], capture_output=True, text=True, timeout=30, check=False)
        except FileNotFoundError:
            continue
        table = ""
        for line in done.stdout.splitlines():
            if line.startswith("*"):
                table = line
            elif line and not line.startswith(("#", "COMMIT")):
                rules.append(f"{tool} {table} {_COUNTERS.sub('', line).strip()}")
    return rules


def _run_entries() -> list[str]:
    found = []
    for path in Path("/run").glob("*"):
        found.append(str(path))
        if path.is_dir() and not path.is_symlink():
            found += [str(child) for child in path.glob("*")]
    return [entry for entry in found if _RUN_MARKS.search(entry)]


def _link_names() -> list[str]:
    done = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    names = [line.split(":")[1].strip().split("@")[0] for line in done.stdout.splitlines()]
    return [name for name in names if _LINK_NAMES.match(name)]


def _cgroups(prefix: str) -> list[str]:
    root = Path("/sys/fs/cgroup")
    found = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        base = root / (
            "unified" if controllers == "" else controllers.split(",")[0].removeprefix("name=")
        )
        directory = base / path.lstrip("/")
        try:
            found += [str(child) for child in directory.iterdir() if child.name.startswith(prefix)]
        except OSError:
            continue
    return found


def _processes_naming(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command:
            found.append(f"{entry.name}: {command[:200]}")
    return found
