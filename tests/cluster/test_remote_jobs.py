"""Jobs and endpoints on joined nodes: the gateway on the master places them, the node's Ray
worker runs them in their sandbox there, and their bytes cross the WireGuard mesh.

Every job runs in a runc container of its own on its node (the job sandbox), which has its
own hostname (``gw-<worker pid>-...``) and no network but its loopback: the function sees
nothing of its node. What says where it ran is the worker's outcome record (the trusted
side, in the object store on the master: the node's hostname, its Ray node) and Ray's node
table (that Ray node's mesh address).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import TypeVar

import pytest

import gridweave as gw
from gridweave_runtime.storage import open_object_store
from job_gateway.execution.outcome import outcome_key
from tests.cluster import functions
from tests.cluster.conftest import Joined
from tests.support.allinone import functions_by_value
from tests.support.cluster.node import Node
from tests.support.cluster.ray_nodes import ray_nodes

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres, pytest.mark.timeout(900)]

R = TypeVar("R")
#: Only node-2 (48 GiB) holds this: not the master (16 GiB) nor node-1 (24 GiB).
ON_NODE_2 = "30GB"
MB = 2**20
_SERVE = (
    "import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
    "s.bind(('{host}', 7100)); s.listen(); c, _ = s.accept(); c.send(b'node-2')"
)
_DIAL = (
    "import socket; s = socket.create_connection(('{host}', 7100), timeout=3); "
    "print(s.recv(16).decode())"
)


@pytest.fixture(autouse=True)
def sdk(joined: Joined, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The SDK as the master's admin, from this thread in the master's network."""
    master = joined.cluster.master
    with functions_by_value(monkeypatch, functions), master.network():
        gw.configure(url=master.platform_url, api_key=master.admin_api_key())
        yield


def _transfer(node: Node) -> tuple[int, int]:
    """Bytes node's WireGuard received and sent (its one peer: the master)."""
    line = node.running.run(["wg", "show", "wg0", "transfer"]).stdout.split()
    return int(line[1]), int(line[2])


def _outcome(joined: Joined, job_id: str, attempt: int) -> dict[str, object]:
    store = open_object_store(joined.cluster.master.storage_config())
    return dict(json.loads(store.get(store.uri(outcome_key(job_id, attempt)))))


def _result_on_node_2(joined: Joined, handle: gw.JobHandle[R]) -> R:
    """The job's value; a job that did not complete fails the test with node-2's Ray log."""
    try:
        return handle.result(timeout=300)
    except gw.JobDidNotComplete as exc:
        raise AssertionError(f"{exc}\n{joined.node_2.ray_worker_log()}") from exc


class TestJobOnARemoteNode:
    def test_the_gateway_places_it_on_node_2_and_it_runs_there(self, joined: Joined) -> None:
        # one retry: on two busy cores Ray's head may declare node-2's raylet dead (its health
        # checks missed) under the first attempt; the placement is what this test is about
        remote = gw.function(vram=ON_NODE_2, timeout=300, retries=1)(functions.where_am_i)
        handle = remote.spawn()
        seen = _result_on_node_2(joined, handle)
        status = handle.status()
        assert status.node == joined.node_2.name
        # the function's own view: a container of its own, named after its worker, no network
        assert str(seen["hostname"]).startswith("gw-")
        assert seen["interfaces"] == ["lo"]
        assert seen["cuda_visible_devices"] == "0"
        # the worker's record: node-2's hostname, a Ray node on node-2's mesh address
        outcome = _outcome(joined, handle.job_id, status.attempts)
        assert outcome["hostname"] == joined.node_2.name
        addresses = {n["node_id"]: n["ip"] for n in ray_nodes(joined.cluster.master)}
        assert addresses[outcome["ray_node_id"]] == joined.node_2.vpn_ip

    def test_a_50_mb_argument_and_result_cross_the_mesh(self, joined: Joined) -> None:
        data = os.urandom(50 * MB)
        received, sent = _transfer(joined.node_2)
        remote = gw.function(vram=ON_NODE_2, timeout=300, retries=1)(functions.reverse)
        result = _result_on_node_2(joined, remote.spawn(data))
        assert result == data[::-1]
        received_now, sent_now = _transfer(joined.node_2)
        # node-2's worker read the argument from the master's object store and wrote the
        # result back, both through its tunnel (each attempt: at least once)
        assert received_now - received > 50 * MB
        assert sent_now - sent > 50 * MB


class TestEndpointOnARemoteNode:
    def test_a_replica_on_node_2_serves_through_the_platform(self, joined: Joined) -> None:
        deployable = gw.endpoint(vram=ON_NODE_2, min_replicas=1)(functions.Greeter)
        endpoint = deployable.deploy("greeter")
        try:
            answer = endpoint.greet("mesh")
            assert answer["greeting"] == "hello mesh"
            assert answer["container"].startswith("gw-")
            assert endpoint.status().node == joined.node_2.name
        finally:
            endpoint.stop()


class TestHubAndSpoke:
    def test_nodes_reach_each_other_only_through_the_master(self, joined: Joined) -> None:
        node_1, node_2 = joined.node_1.running, joined.node_2.running
        master = joined.cluster.master.running
        route = node_1.run(["ip", "route", "get", joined.node_2.vpn_ip]).stdout
        assert " dev wg0 " in route  # the mesh's one route: the tunnel to the master
        serve = _SERVE.format(host=joined.node_2.vpn_ip)
        dial = ["python3", "-c", _DIAL.format(host=joined.node_2.vpn_ip)]
        log = joined.node_2.workdir / "serve.log"
        listening = node_2.popen(["python3", "-c", serve], log=log)
        try:
            node_2.wait_listening(7100)
            assert node_1.run(dial).stdout.strip() == "node-2"  # through the master
            listening.wait(timeout=10)
            listening = node_2.popen(["python3", "-c", serve], log=log)
            node_2.wait_listening(7100)
            master.run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=0"])
            try:
                assert node_1.run(dial, check=False).returncode != 0  # no other way
            finally:
                master.run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
            assert node_1.run(dial).stdout.strip() == "node-2"
        finally:
            listening.kill()
            listening.wait(timeout=10)
