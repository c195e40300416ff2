"""The real join: nodes in namespaces run ``deploy/join-node.sh`` (not ``--dry-run``) with a
key from ``gridweave admin join-key create`` and join the master over WireGuard.

Stand-ins, each for what cannot exist here (``tests/support/cluster/standins``):
``systemctl`` (no systemd in a namespace; it runs the heartbeat unit and the agent), and
the K3s agent (no registry serves K3s), which starts the node's Ray worker where K3s would
start its pod: in a container of the node's Docker daemon when the worker image there runs
the head's Python and Ray, else as a process of the node, writing why. Everything else is
real: kuberay-service's validate and register, wg-quick over userspace WireGuard (each
node's socket and configuration in its own /run and /etc), the master's peers kept by
kuberay-service, the node's heartbeat, Ray over the mesh.
"""

from __future__ import annotations

import time

import pytest

from tests.cluster.conftest import NODE_1_VRAM_MB, Joined
from tests.support.cluster.cluster import Cluster
from tests.support.cluster.ray_nodes import ray_nodes

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres, pytest.mark.timeout(900)]


class TestJoinScript:
    def test_the_script_validates_tunnels_and_registers(self, joined: Joined) -> None:
        output = joined.node_1.join_output
        assert "would run" not in output  # not a dry run
        assert f"GRIDWEAVE_NODE={joined.node_1.name}" in output
        assert f"GRIDWEAVE_VPN_IP={joined.node_1.vpn_ip}" in output
        assert "wireguard-go wg0" in output  # wg-quick fell back to userspace WireGuard
        assert "gridweave/ray-worker:latest is present: kept" in output

    def test_the_stand_ins_got_what_systemd_would(self, joined: Joined) -> None:
        assert joined.node_1.systemctl_calls() == [
            "enable wg-quick@wg0",
            "enable k3s-agent",
            "restart k3s-agent",
            "daemon-reload",
            "enable --now gridweave-heartbeat.service",
        ]

    def test_nodes_get_consecutive_mesh_addresses(self, joined: Joined) -> None:
        addresses = {joined.node_1.vpn_ip, joined.node_2.vpn_ip}
        assert addresses == {"10.88.0.2", "10.88.0.3"}


class TestListed:
    def test_gridweave_nodes_lists_the_joined_gpus_ready(self, joined: Joined) -> None:
        listed = joined.cluster.listed_nodes()
        node = listed[joined.node_1.name]
        assert node["ready"] is True
        assert [gpu["vram_mb"] for gpu in node["gpus"]] == [NODE_1_VRAM_MB]
        assert listed["master"]["gpus"][0]["simulated"] is True  # the head's own, beside them

    def test_the_registry_has_the_mesh_address(self, joined: Joined) -> None:
        registered = joined.cluster.joined_nodes()[joined.node_2.name]
        assert registered["status"] == "Ready"
        assert registered["vpn_ip"] == joined.node_2.vpn_ip

    def test_the_heartbeat_keeps_it_ready(self, joined: Joined) -> None:
        cluster = joined.cluster
        first = cluster.joined_nodes()[joined.node_1.name]["last_heartbeat_at"]
        time.sleep(6)  # past KUBERAY_HEARTBEAT_TIMEOUT_SECONDS (4)
        again = cluster.joined_nodes()[joined.node_1.name]
        assert again["status"] == "Ready" and again["last_heartbeat_at"] > first


class TestMesh:
    def test_the_master_has_one_peer_per_node_with_a_handshake(self, joined: Joined) -> None:
        shown = joined.cluster.master.running.run(["wg", "show", "wg0", "dump"]).stdout
        peers = {line.split("\t")[3]: line.split("\t") for line in shown.splitlines()[1:]}
        for node in (joined.node_1, joined.node_2):
            assert f"{node.vpn_ip}/32" in peers
            assert int(peers[f"{node.vpn_ip}/32"][4]) > 0  # latest handshake

    def test_a_node_has_the_master_as_its_only_peer(self, joined: Joined) -> None:
        shown = joined.node_1.running.run(["wg", "show", "wg0", "dump"]).stdout.splitlines()
        assert len(shown) == 2  # the interface, one peer
        peer = shown[1].split("\t")
        assert peer[0] == joined.cluster.master.public_key
        assert peer[2].startswith(joined.cluster.layout.master_lan_ip + ":")
        assert peer[3] == str(joined.cluster.layout.mesh)

    def test_each_node_keeps_its_own_wireguard_socket(
        self, joined: Joined, cluster: Cluster
    ) -> None:
        for machine in (joined.node_1.running, joined.node_2.running, cluster.master.running):
            assert machine.run(["ls", "/run/wireguard"]).stdout.split() == ["wg0.sock"]


class TestRayWorker:
    def test_each_node_s_worker_joined_the_head_over_the_mesh(self, joined: Joined) -> None:
        nodes = ray_nodes(joined.cluster.master)
        by_label = {n["labels"].get("gridweave.io/node"): n for n in nodes if n["alive"]}
        assert by_label["master"]["ip"] == joined.cluster.layout.master_vpn_ip
        for node in (joined.node_1, joined.node_2):
            assert by_label[node.name]["ip"] == node.vpn_ip
            assert by_label[node.name]["gpus"] == 1

    def test_the_agent_stand_in_wrote_where_the_worker_runs(self, joined: Joined) -> None:
        mode = joined.node_1.ray_worker_mode()
        # until the image test builds the real worker image, the node's Docker holds a
        # placeholder under its name, which runs no Ray: the worker is a process
        assert mode.startswith(("process: ", "container ")), mode
        if mode.startswith("process: "):
            assert "the head '3." in mode
