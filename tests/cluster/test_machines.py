"""The test cluster's machines themselves (``tests/support/cluster``), without the platform.

A LAN bridge in a namespace of its own, a master machine and two node machines, each node
in network, mount, UTS and pid namespaces of its own with its own Docker daemon: the host's
network is untouched, a node sees its own ``/run``, ``/etc``, ``/tmp`` and processes and
none of the master's files, Docker's bridge and iptables rules stay in the node, killing a
node's init ends the whole node, and once stopped nothing is left on the host.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster.lan import Lan
from tests.support.cluster.layout import Layout
from tests.support.cluster.leaks import host_leaks, host_snapshot
from tests.support.cluster.machine import Machine, namespace_members
from tests.support.cluster.master import Master
from tests.support.cluster.node import Node
from tests.support.cluster.prerequisites import require_cluster_tools
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.timeout(600)]

LAYOUT = Layout()
_ECHO = (
    "import socket; s = socket.create_connection(('{host}', {port}), timeout=5); "
    "print(s.recv(64).decode())"
)
_SERVE = (
    "import socket; s = socket.socket(); "
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', {port})); "
    "s.listen(); c, _ = s.accept(); c.send(socket.gethostname().encode())"
)


class Machines:
    """The LAN, the master machine and two nodes (no platform, no join)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.lan = Lan(workdir / "lan", cgroup="gwc-machines-lan")
        self.master = Master(workdir / "master", LAYOUT, cgroup="gwc-machines-master")
        master = self.master.start_machine()
        self.lan.wire(master, LAYOUT.master_lan_ip, LAYOUT.lan.prefixlen)
        self.nodes: list[Node] = []
        for number in (1, 2):
            node = Node(
                workdir / f"node-{number}", LAYOUT, number, cgroup=f"gwc-machines-node-{number}"
            )
            self.nodes.append(node)
            self.lan.wire(node.start(), node.lan_ip, LAYOUT.lan.prefixlen)
            node.start_docker()
        self.inodes = [m.net_inode for m in self.all()]

    def all(self) -> list[Machine]:
        return [self.lan.machine, self.master.running, *(node.running for node in self.nodes)]

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.master.stop()
        self.lan.stop()


@pytest.fixture(scope="module")
def machines() -> Iterator[Machines]:
    require_cluster_tools()
    before = host_snapshot()
    workdir = Path(tempfile.mkdtemp(prefix="gwc-machines-"))
    made = Machines(workdir)
    try:
        yield made
    finally:
        made.stop()
        leaks = host_leaks(before, workdir=workdir, cluster_id="machines", net_inodes=made.inodes)
        shutil.rmtree(workdir, ignore_errors=True)
        assert not leaks, "\n".join(leaks)


def _host_links() -> set[str]:
    done = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    return {line.split(":")[1].strip() for line in done.stdout.splitlines()}


class TestNetwork:
    def test_the_lan_bridge_and_the_cables_are_not_on_the_host(self, machines: Machines) -> None:
        assert not {"br0", "to-master", "to-node-1", "to-node-2"} & _host_links()
        lan_links = machines.lan.machine.run(["ip", "-o", "link"]).stdout
        for port in ("br0", "to-master", "to-node-1", "to-node-2"):
            assert port in lan_links

    def test_a_node_reaches_the_master_and_the_other_node_over_the_lan(
        self, machines: Machines
    ) -> None:
        master = machines.master.running
        node_1, node_2 = machines.nodes
        for server, address in ((master, LAYOUT.master_lan_ip), (node_2.running, node_2.lan_ip)):
            listening = server.popen(
                ["python3", "-c", _SERVE.format(port=7000)], log=machines.workdir / "serve.log"
            )
            server.wait_listening(7000)
            answer = node_1.running.run(["python3", "-c", _ECHO.format(host=address, port=7000)])
            assert answer.stdout.strip() == server.name
            listening.wait(timeout=10)

    def test_the_host_does_not_reach_the_lan(self, machines: Machines) -> None:
        probe = subprocess.run(
            ["python3", "-c", _ECHO.format(host=LAYOUT.master_lan_ip, port=7001)],
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert probe.returncode != 0


class TestNodeIsolation:
    def test_a_node_has_its_own_init_hostname_and_processes(self, machines: Machines) -> None:
        node = machines.nodes[0].running
        assert node.run(["hostname"]).stdout.strip() == "node-1"
        assert "machine_init.py" in node.run(["cat", "/proc/1/cmdline"]).stdout
        seen = node.run(["ps", "-eo", "pid,comm"]).stdout
        assert "dockerd" in seen and "process_api" not in seen  # not the host's processes

    def test_a_node_has_its_own_run_etc_and_tmp(self, machines: Machines) -> None:
        node = machines.nodes[0].running
        assert node.run(["cat", "/etc/hostname"]).stdout.strip() == "node-1"
        assert Path("/etc/hostname").read_text().strip() != "node-1"
        run = set(node.run(["ls", "/run"]).stdout.split())
        assert "docker.sock" in run and not run & {p.name for p in Path("/run").iterdir()} - {
            "mount"
        }
        node.run(["sh", "-c", "mkdir -p /etc/wireguard && echo node > /etc/wireguard/mine"])
        assert not Path("/etc/wireguard/mine").exists()
        assert node.run(["test", "-e", str(machines.master.workdir)], check=False).returncode != 0

    def test_docker_runs_a_container_whose_rules_stay_in_the_node(self, machines: Machines) -> None:
        node = machines.nodes[0].running
        rootfs = "/var/cache/gridweave/sandbox/base/rootfs"  # Debian's python3 (make sandbox)
        node.run(
            ["sh", "-c", f"tar -C {rootfs} -c . | docker import - gw-test/debian:latest"],
            timeout=300,
        )
        ran = node.run(
            ["docker", "run", "--rm", "gw-test/debian:latest", "python3", "-c", "print(6 * 7)"]
        )
        assert ran.stdout.strip() == "42"
        assert "DOCKER" in node.run(["iptables-save"]).stdout
        host_rules = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True)
        assert "DOCKER" not in host_rules.stdout


class TestKillingANode:
    def test_killing_the_init_ends_every_process_of_the_node(self, machines: Machines) -> None:
        node = machines.nodes[1]
        inode = node.running.net_inode
        members = namespace_members(inode)
        assert len(members) > 3  # init, dockerd, containerd, ...
        node.kill()
        wait_until(
            lambda: not namespace_members(inode), timeout=30, what="node-2's processes to end"
        )
        lan = machines.lan.machine  # its cable goes with its namespace (the kernel's cleanup)
        wait_until(
            lambda: "to-node-2" not in lan.run(["ip", "-o", "link"]).stdout,
            timeout=30,
            what="node-2's cable to go",
        )
