"""Several machines on one host: a LAN, a master running the platform, GPU nodes that join.

:class:`Cluster` starts the LAN (a bridge in a namespace of its own), the master (the
all-in-one, the WireGuard hub, an S3 API) and, on demand, nodes, each joined with the real
``deploy/join-node.sh`` and a join key from ``gridweave admin join-key create``. Everything
it starts it stops: the machines' processes (by pid namespace, or by network namespace
where there is none), their cgroups, their mounts (which die with their mount namespaces);
nothing is made in the host's network, iptables, ``/run`` or ``/etc``
(:mod:`tests.support.cluster.leaks` checks it).
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.cluster.lan import Lan
from tests.support.cluster.layout import Layout
from tests.support.cluster.leaks import host_leaks, host_snapshot
from tests.support.cluster.machine import Machine
from tests.support.cluster.master import Master
from tests.support.cluster.node import Node
from tests.support.cluster.ray_nodes import ray_nodes

__all__ = ["Cluster", "running_cluster", "simulated_gpus"]

#: The Ray node label naming the Gridweave node (job_gateway.execution.actors.NODE_LABEL).
NODE_LABEL = "gridweave.io/node"

_GRIDWEAVE = Path(sys.executable).with_name("gridweave")


def simulated_gpus(count: int = 1, *, vram_mb: int = 24576) -> list[dict[str, Any]]:
    """GPUs a node declares (``join-node.sh --gpus``): this host has none."""
    return [
        {"index": i, "vendor": "nvidia", "model": "Simulated GPU", "vram_mb": vram_mb}
        for i in range(count)
    ]


class Cluster:
    """The LAN, the master and the nodes, under ``workdir``."""

    def __init__(self, workdir: Path, *, layout: Layout | None = None) -> None:
        self.workdir = workdir
        self.layout = layout or Layout()
        self.id = secrets.token_hex(4)
        self.lan: Lan | None = None
        self.master = Master(workdir / "master", self.layout, cgroup=self.cgroup("master"))
        self.nodes: list[Node] = []

    def cgroup(self, machine: str) -> str:
        """The cgroup (under the test's own, in every hierarchy) of one machine."""
        return f"gwc-{self.id}-{machine}"

    def start(self, environment: dict[str, str] | None = None) -> None:
        """The LAN and the master, with the platform answering."""
        self.lan = Lan(self.workdir / "lan", cgroup=self.cgroup("lan"))
        machine = self.master.start_machine()
        self.lan.wire(machine, self.layout.master_lan_ip, self.layout.lan.prefixlen)
        self.master.start_services(environment or {})

    def add_node(self) -> Node:
        """A new node machine on the LAN, its Docker daemon up, not joined yet."""
        assert self.lan is not None
        number = len(self.nodes) + 1
        node = Node(
            self.workdir / f"node-{number}",
            self.layout,
            number,
            cgroup=self.cgroup(f"node-{number}"),
        )
        self.nodes.append(node)
        machine = node.start()
        self.lan.wire(machine, node.lan_ip, self.layout.lan.prefixlen)
        node.start_docker()
        node.load_placeholder_image()
        return node

    def create_join_key(self, *, uses: int = 1) -> str:
        """``gridweave admin join-key create`` on the master, as its admin; the key."""
        done = self.gridweave(
            "admin", "join-key", "create", "--uses", str(uses), "--ttl", "1h", "--json"
        )
        return str(json.loads(done.stdout)["key"])

    def gridweave(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """The ``gridweave`` command on the master as its admin."""
        return self.master.running.run(
            [str(_GRIDWEAVE), *args], env=self.master.cli_environment(), timeout=60, check=check
        )

    def join(
        self, node: Node, *, gpus: int = 1, vram_mb: int = 24576, join_key: str | None = None
    ) -> str:
        """The node joins with the real join-node.sh, declaring ``gpus`` simulated GPUs of
        ``vram_mb`` each; its output."""
        node.give_pod_spec(self.master, gpus=gpus)
        node.join_key = join_key or self.create_join_key()
        declared = simulated_gpus(gpus, vram_mb=vram_mb)
        return node.join(self.master.kuberay_url, node.join_key, declared)

    def listed_nodes(self) -> dict[str, dict[str, Any]]:
        """``gridweave nodes --json`` on the master (the gateway's inventory), by name."""
        listed = json.loads(self.gridweave("nodes", "--json").stdout)
        return {row["name"]: row for row in listed["nodes"]}

    def joined_nodes(self) -> dict[str, dict[str, Any]]:
        """``gridweave admin nodes --json`` on the master (the registry), by name."""
        listed = json.loads(self.gridweave("admin", "nodes", "--json").stdout)
        return {row["name"]: row for row in listed["nodes"]}

    def wait_node(self, name: str, *, ready: bool | None, timeout: float = 60.0) -> None:
        """Until ``gridweave nodes`` lists ``name`` ready (or not ready; ``None``: absent)."""
        deadline = time.monotonic() + timeout
        while True:
            row = self.listed_nodes().get(name)
            if (row is None and ready is None) or (row is not None and row["ready"] == ready):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} not ready={ready} after {timeout} s: {row}")
            time.sleep(0.5)

    def machines(self) -> list[Machine]:
        """Every machine started so far."""
        found = [node.machine for node in self.nodes] + [self.master.machine]
        found.append(None if self.lan is None else self.lan.machine)
        return [machine for machine in found if machine is not None]

    def net_inodes(self) -> list[int]:
        """The network namespaces of every machine started so far."""
        return [machine.net_inode for machine in self.machines()]

    def wait_ray_worker(self, node: Node, *, timeout: float = 300.0) -> None:
        """Until the head lists ``node``'s Ray worker alive at its mesh address. A busy host
        may take a few of the agent's restarts: Ray's raylet aborts when its dashboard agent
        has not written its ports within 15 s (fixed in Ray 2.60), a Python start that a
        saturated CPU makes longer."""
        deadline = time.monotonic() + timeout
        while True:
            alive = {
                n["labels"].get(NODE_LABEL): n["ip"] for n in ray_nodes(self.master) if n["alive"]
            }
            if alive.get(node.name) == node.vpn_ip:
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{node.name}'s Ray worker did not join: {alive}\n{node.ray_worker_log()}"
                )
            time.sleep(3.0)  # each look is a Ray driver of its own: a few CPU seconds

    def stop(self) -> None:
        """Every machine, nodes first; their processes, cgroups and namespaces."""
        errors: list[BaseException] = []
        for step in [*(node.stop for node in self.nodes), self.master.stop]:
            try:
                step()
            except BaseException as exc:  # stop the rest all the same
                errors.append(exc)
        if self.lan is not None:
            self.lan.stop()
        if errors:
            raise errors[0]


@contextmanager
def running_cluster(
    *, nodes: int = 0, environment: dict[str, str] | None = None, prefix: str = "gwc-"
) -> Iterator[Cluster]:
    """A started cluster with ``nodes`` node machines (not joined) for the block; once it is
    stopped, ``AssertionError`` names whatever it left on the host."""
    before = host_snapshot()
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    workdir.chmod(0o755)  # the embedded PostgreSQL runs as another user and passes through
    cluster = Cluster(workdir)
    try:
        cluster.start(environment)
        for _ in range(nodes):
            cluster.add_node()
        yield cluster
    finally:
        try:
            cluster.stop()
            leaks = host_leaks(
                before, workdir=workdir, cluster_id=cluster.id, net_inodes=cluster.net_inodes()
            )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        assert not leaks, "the cluster left on the host:\n" + "\n".join(leaks)
