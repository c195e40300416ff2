"""Nodes that die and nodes that leave: the jobs move and finish elsewhere, billed for every
second each attempt ran, once; a node killed and started again rejoins at its address.

Two nodes of their own (64 GiB each, so only they hold a 56 GiB job and the job can only
move from one to the other): one is killed mid-job (SIGKILL to its init: WireGuard, its Ray
worker, the job's container, all at once), started again from its disks and rejoined with
its key; then one leaves with ``deploy/leave-node.sh`` while a job runs there.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

import gridweave as gw
from gridweave_clients.metering.models import UsageRecordResponse
from gridweave_clients.platform import PlatformClient
from gridweave_clients.platform.models import JobResponse
from tests.cluster import functions
from tests.support.allinone import functions_by_value
from tests.support.cluster.cluster import Cluster, simulated_gpus
from tests.support.cluster.node import Node
from tests.support.cluster.ray_nodes import ray_nodes
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres, pytest.mark.timeout(900)]

BIG_VRAM_MB = 65536
ON_A_BIG_NODE = "56GB"  # more than node-2 (48 GiB) holds
RUN_BEFORE_KILL_S = 4.0
JOB_SECONDS = 8.0


@dataclass
class Big:
    """The two 64 GiB nodes of this module, and what the tests learn in order."""

    cluster: Cluster
    nodes: list[Node]
    addresses: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def big(cluster: Cluster) -> Iterator[Big]:
    nodes = [cluster.add_node(), cluster.add_node()]
    for node in nodes:
        cluster.join(node, vram_mb=BIG_VRAM_MB)
    for node in nodes:
        cluster.wait_node(node.name, ready=True)
        cluster.wait_ray_worker(node)
    yield Big(cluster, nodes, {node.name: node.vpn_ip for node in nodes})
    # the package's cluster goes on to the next modules as they know it: a 64 GiB node left
    # joined would take the jobs they place by size on node-2 (48 GiB)
    for node in nodes:
        alive = node.machine is not None and node.machine.alive
        if alive and node.state_file("node.json").exists():  # leave-node.sh removes it
            node.leave()
    for node in nodes:
        if node.machine is not None and node.machine.alive:
            cluster.wait_node(node.name, ready=None)


@pytest.fixture(autouse=True)
def sdk(big: Big, monkeypatch: pytest.MonkeyPatch) -> Iterator[PlatformClient]:
    master = big.cluster.master
    with functions_by_value(monkeypatch, functions), master.network():
        key = master.admin_api_key()
        gw.configure(url=master.platform_url, api_key=key)
        with PlatformClient(master.platform_url, key) as client:
            yield client


def _log_lines(big: Big, text: str) -> str:
    """The master's log lines that name ``text`` (a job id), file by file."""
    platform = big.cluster.master.platform
    assert platform is not None, "the master's platform is not running"
    logs = platform.state_dir / "logs"
    found = [
        f"{path.name}: {line}"
        for path in sorted(logs.glob("*.log"))
        for line in path.read_text(errors="replace").splitlines()
        if text in line
    ]
    return "\n".join(found[-60:])


def _live_ray_nodes(cluster: Cluster, name: str) -> int:
    """How many live Ray nodes serve the Gridweave node ``name``."""
    nodes = ray_nodes(cluster.master)
    return sum(1 for n in nodes if n["alive"] and n["labels"].get("gridweave.io/node") == name)


def _by_name(big: Big, name: str | None) -> Node:
    return next(node for node in big.nodes if node.name == name)


def _running(handle: gw.JobHandle[float], *, attempts: int | None = 0) -> JobResponse:
    """The job's status once it runs its attempt ``attempts`` (None: whichever)."""
    deadline = time.monotonic() + 180
    while True:
        status = handle.status()
        if status.phase == "Running" and attempts in (None, status.attempts):
            return status
        if status.finished or time.monotonic() >= deadline:
            conditions = [(c.type, c.reason, c.message) for c in status.conditions]
            raise AssertionError(
                f"never seen Running after {attempts} attempts: {status.phase} "
                f"on {status.node}, {status.attempts} attempts, {conditions}"
            )
        time.sleep(0.2)


# what deploy/leave-node.sh counts as the work running on its node
_WORK_RUNNING_HERE = ["pgrep", "-c", "-f", r"^ray::(JobWorker\.run|ServeReplica)"]


def _running_there(big: Big, handle: gw.JobHandle[float]) -> JobResponse:
    """The job's status once it runs and its node shows the attempt's process: a warm worker
    that died with a killed node is marked Running when it is handed an attempt, and is
    seen lost (the attempt retried) only once Ray reports its death."""
    deadline = time.monotonic() + 180
    while True:
        status = _running(handle, attempts=None)
        node = _by_name(big, status.node)
        counted = node.running.run(_WORK_RUNNING_HERE, check=False).stdout.strip()
        if counted not in ("", "0"):
            return status
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"Running on {status.node} after {status.attempts} attempts, "
                f"but no attempt's process runs there"
            )
        time.sleep(0.2)


class Watch:
    """The job's status every 0.2 s in a thread (in the master's network, like the test)."""

    def __init__(self, client: PlatformClient, job_id: str) -> None:
        self.seen: list[tuple[float, JobResponse]] = []
        self._stop = threading.Event()
        self._client, self._job_id = client, job_id
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.seen.append((time.time(), self._client.get_job(self._job_id)))
            time.sleep(0.2)

    def first(self, attempts: int) -> float:
        """When the job was first seen on attempt ``attempts`` (requeued)."""
        return next(at for at, status in self.seen if status.attempts >= attempts)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


class TestNodeKilledMidJob:
    def test_it_goes_not_ready_and_its_job_finishes_elsewhere_billed_once(
        self, big: Big, sdk: PlatformClient
    ) -> None:
        handle = gw.function(vram=ON_A_BIG_NODE, timeout=300, retries=2)(functions.sleep_for).spawn(
            JOB_SECONDS
        )
        first = _running(handle)
        victim = _by_name(big, first.node)
        time.sleep(RUN_BEFORE_KILL_S)
        victim.kill()
        killed_at = time.monotonic()
        big.cluster.wait_node(victim.name, ready=False)
        assert big.cluster.joined_nodes()[victim.name]["status"] == "NotReady"
        assert handle.result(timeout=300) == JOB_SECONDS
        moved_after = time.monotonic() - killed_at
        done = handle.status()
        assert done.phase == "Completed" and done.attempts == 1
        assert done.node != victim.name and done.node in big.addresses

        # billed once, for both attempts: the lost one until it was requeued, and the last
        def records() -> list[UsageRecordResponse]:
            return [r for r in sdk.list_usage(limit=200).records if r.job_id == handle.job_id]

        # the gateway reports the usage after the outcome is written: it may lag the result
        wait_until(lambda: bool(records()), timeout=60, what="the job's usage record")
        found = records()
        assert len(found) == 1
        record = found[0]
        assert done.wall_seconds is not None and done.billed_seconds is not None
        earlier = record.wall_seconds - done.wall_seconds
        assert RUN_BEFORE_KILL_S <= earlier <= RUN_BEFORE_KILL_S + moved_after + 5
        assert record.billed_seconds == done.billed_seconds == math.ceil(record.wall_seconds)
        assert record.node == done.node


class TestRejoin:
    def test_a_killed_node_started_again_rejoins_at_its_address(self, big: Big) -> None:
        cluster = big.cluster
        dead = next(node for node in big.nodes if not node.running.alive)
        assert cluster.lan is not None
        cluster.lan.wire(dead.start(), dead.lan_ip, cluster.layout.lan.prefixlen)  # its disks kept
        dead.start_docker()
        dead.give_pod_spec(cluster.master, gpus=1)
        output = dead.join(
            cluster.master.kuberay_url, dead.join_key, simulated_gpus(1, vram_mb=BIG_VRAM_MB)
        )
        assert "making this node's WireGuard key pair" not in output  # the kept pair
        assert dead.vpn_ip == big.addresses[dead.name]
        cluster.wait_node(dead.name, ready=True)
        cluster.wait_ray_worker(dead)
        # Ray's head declares the killed raylet dead only once its health checks time out
        # (its address is black-holed, not refused): until then it lists two live Ray nodes
        # for the one node, and an actor may be sent to the dead one
        wait_until(
            lambda: _live_ray_nodes(cluster, dead.name) == 1,
            timeout=120,
            what=f"the Ray head to declare {dead.name}'s killed raylet dead",
        )


class TestLeave:
    def test_the_jobs_move_first_then_peer_worker_and_registration_go(
        self, big: Big, sdk: PlatformClient
    ) -> None:
        cluster = big.cluster
        handle = gw.function(vram=ON_A_BIG_NODE, timeout=300, retries=2)(functions.sleep_for).spawn(
            JOB_SECONDS
        )
        # the first attempt may be lost before this test's leave (the node killed and
        # started again above can take a worker with it): the leave moves whichever runs
        try:
            running = _running_there(big, handle)
        except AssertionError as never_ran:
            raise AssertionError(f"{never_ran}\n{_log_lines(big, handle.job_id)}") from None
        leaving, moved = _by_name(big, running.node), running.attempts + 1
        watch = Watch(sdk, handle.job_id)
        try:
            output = leaving.leave()
        finally:
            watch.stop()
        assert "the heartbeat stops so the master moves them" in output
        assert f"GRIDWEAVE_LEFT={leaving.name}" in output
        # the job was requeued before the Ray worker was stopped
        calls = leaving.systemctl_log()
        worker_stopped = next(at for at, call in calls if call == "disable --now k3s-agent")
        assert watch.first(attempts=moved) < worker_stopped
        assert handle.result(timeout=300) == JOB_SECONDS
        done = handle.status()
        assert done.attempts == moved and done.node != leaving.name
        # the registration, the peer and the Ray worker are gone
        assert leaving.name not in cluster.joined_nodes()
        cluster.wait_node(leaving.name, ready=None)
        peers = cluster.master.running.run(["wg", "show", "wg0", "allowed-ips"]).stdout
        wait_until(
            lambda: (
                big.addresses[leaving.name]
                not in cluster.master.running.run(["wg", "show", "wg0", "allowed-ips"]).stdout
            ),
            timeout=30,
            what=f"{leaving.name}'s peer to go ({peers})",
        )
        wait_until(  # the Ray head's health checks time out on the stopped raylet
            lambda: _live_ray_nodes(cluster, leaving.name) == 0,
            timeout=120,
            what=f"{leaving.name}'s Ray worker to leave the Ray cluster",
        )
        assert leaving.running.run(["ls", "/run/wireguard"], check=False).stdout.strip() == ""
