"""Several machines on one host: what a joined node costs, on the test cluster of namespaces.

The cluster of ``tests/support/cluster`` (a LAN bridge, a master running ``gridweave up``
with the WireGuard hub and the S3 API, GPU nodes in namespaces of their own joined with the
real ``deploy/join-node.sh`` over userspace WireGuard) with the tests' settings (heartbeat
every 1 s, NotReady after 4 s, a lost node's jobs requeued 2 s later). The master's
simulated GPU and each node's have their own model name, so ``gpu_model`` places a job on
the head or on a node.

1. **Join**: seconds from ``join-node.sh`` starting on a node to the first job placed on it
   Running (a job pinned to the node, submitted as soon as the script exits).
2. **Submit to result**: ``--warmup`` calls, then ``--calls`` ``.remote()`` of a trivial
   function alternated between the head and node 1; p50 of each and their ratio.
3. **50 MB**: node 1 reads 50 MB from the master over the mesh and over the LAN directly,
   ``--rounds`` each, alternated: a raw TCP stream, and a GET from the S3 API (what a
   worker does with an argument); MB/s from the p50. Then a 50 MB argument ``.remote()``
   on the head and on node 1.
4. **A node dies**: a job runs on a node, the node's init gets SIGKILL; seconds until the
   node is NotReady and until the job runs again on the other node.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import cloudpickle

import gridweave as gw
from bench.report import machine_line, write_section
from gridweave_runtime.storage import S3ObjectStore
from tests.support.cluster.cluster import Cluster, running_cluster
from tests.support.cluster.master import S3_ACCESS_KEY, S3_BUCKET, S3_PORT, S3_SECRET_KEY
from tests.support.cluster.node import Node
from tests.support.cluster.prerequisites import require_cluster_tools
from tests.support.sandbox import sandbox_config

HEAD_MODEL = "Simulated Head GPU"
NODE_VRAM_MB = 49152
MB = 2**20
SIZE = 50 * MB
TCP_PORT = 7200
_MARK = "GRIDWEAVE_BENCH="

#: On the master: a TCP server that sends SIZE bytes to each connection, then closes it.
_SEND = f"""
import socket
data = bytes({SIZE})
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", {TCP_PORT}))
server.listen()
while True:
    connection, _ = server.accept()
    connection.sendall(data)
    connection.close()
"""

#: On a node: read SIZE bytes from each of the master's addresses, alternated, by TCP and
#: from the S3 API; seconds of each read.
_READ = f"""
import json, socket, sys, time
import boto3
addresses, key, rounds = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s3 = {{
    name: boto3.client(
        "s3", endpoint_url=f"http://{{ip}}:{S3_PORT}", region_name="us-east-1",
        aws_access_key_id="{S3_ACCESS_KEY}", aws_secret_access_key="{S3_SECRET_KEY}",
    )
    for name, ip in addresses.items()
}}

def tcp(ip):
    with socket.create_connection((ip, {TCP_PORT}), timeout=60) as connection:
        got = 0
        while chunk := connection.recv(1 << 20):
            got += len(chunk)
    assert got == {SIZE}, got

def get(name):
    body = s3[name].get_object(Bucket="{S3_BUCKET}", Key=key)["Body"].read()
    assert len(body) == {SIZE}, len(body)

seconds = {{f"{{how}} {{name}}": [] for how in ("tcp", "s3") for name in addresses}}
for i in range(rounds + 1):  # the first round warms the connections up, not counted
    for name, ip in addresses.items():
        for how, read in (("tcp", lambda: tcp(ip)), ("s3", lambda: get(name))):
            clock = time.perf_counter()
            read()
            if i:
                seconds[f"{{how}} {{name}}"].append(time.perf_counter() - clock)
print("{_MARK}" + json.dumps(seconds), flush=True)
"""


def add(x: int, y: int) -> int:
    return x + y


def length(data: bytes) -> int:
    return len(data)


def sleep_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def node_model(node: Node) -> str:
    return f"Simulated GPU {node.number}"


def _say(began: float, text: str) -> None:
    print(f"[{time.monotonic() - began:6.1f} s] {text}", flush=True)


def _wait_phase(handle: gw.JobHandle[Any], phase: str, *, attempts: int | None = 0) -> float:
    """Polls every 0.1 s until the job is in ``phase`` on attempt ``attempts`` (None:
    whichever); the moment."""
    deadline = time.monotonic() + 300
    while True:
        status = handle.status()
        if status.phase == phase and attempts in (None, status.attempts):
            return time.monotonic()
        assert time.monotonic() < deadline, status
        assert status.phase not in ("Failed", "Cancelled", "TimedOut"), status
        time.sleep(0.1)


def _spawn_once_known(pinned: gw.Function[[int, int], int]) -> gw.JobHandle[int]:
    """``pinned.spawn(1, 2)``, submitted again while the gateway's inventory does not list the
    node's GPU model yet (a 422 naming gpu_models: the node joined after its last read)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            return pinned.spawn(1, 2)
        except gw.NoGpuLargeEnough as unknown:
            if unknown.field != "gpu_models" or time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def join_to_first_job(cluster: Cluster, node: Node) -> float:
    """Seconds from join-node.sh starting on ``node`` to a job pinned to it Running."""
    node.give_pod_spec(cluster.master, gpus=1)
    node.join_key = cluster.create_join_key()
    gpus = [{"index": 0, "vendor": "nvidia", "model": node_model(node), "vram_mb": NODE_VRAM_MB}]
    began = time.monotonic()
    node.join(cluster.master.kuberay_url, node.join_key, gpus)
    # retries: a first attempt lost on a node that just joined is part of the time measured
    pinned = gw.function(vram="8GB", gpu_model=node_model(node), timeout="5m", retries=2)(add)
    with cluster.master.network():
        handle = _spawn_once_known(pinned)
        running = _wait_phase(handle, "Running", attempts=None)
        assert handle.result(timeout=300) == 3
        assert handle.status().node == node.name
    return running - began


def submit_to_result(
    cluster: Cluster, node: Node, calls: int, warmup: int
) -> dict[str, list[float]]:
    """Seconds of ``.remote()`` to value on the head and on ``node``, alternated."""
    where = {
        "head": gw.function(vram="1GB", gpu_model=HEAD_MODEL, timeout="1m")(add),
        "node": gw.function(vram="1GB", gpu_model=node_model(node), timeout="1m")(add),
    }
    seconds: dict[str, list[float]] = {name: [] for name in where}
    with cluster.master.network():
        for i in range(warmup + calls):
            for name, function in where.items():
                clock = time.perf_counter()
                assert function.remote(i, 1) == i + 1
                if i >= warmup:
                    seconds[name].append(time.perf_counter() - clock)
    return seconds


def reads_of_50_mb(cluster: Cluster, node: Node, rounds: int) -> dict[str, list[float]]:
    """Seconds of node's reads of 50 MB from the master: TCP and S3, over the mesh and the LAN."""
    master = cluster.master
    key = "bench/cluster-50mb"
    with master.network():
        S3ObjectStore(master.storage_config()).put(key, os.urandom(SIZE))
    sender = master.running.popen(
        [sys.executable, "-c", _SEND], log=master.workdir / "bench-send.log"
    )
    try:
        master.running.wait_listening(TCP_PORT)
        addresses = {"mesh": cluster.layout.master_vpn_ip, "LAN": cluster.layout.master_lan_ip}
        done = node.running.run(
            [sys.executable, "-c", _READ, json.dumps(addresses), key, str(rounds)],
            env={"PATH": "/usr/bin:/bin", "HOME": "/root"},
            timeout=600,
        )
    finally:
        sender.kill()
        sender.wait(timeout=10)
    line = next(x for x in done.stdout.splitlines() if x.startswith(_MARK))
    return {name: list(values) for name, values in json.loads(line.removeprefix(_MARK)).items()}


def argument_of_50_mb(cluster: Cluster, node: Node, calls: int) -> dict[str, list[float]]:
    """Seconds of ``.remote()`` with a 50 MB argument on the head and on ``node``."""
    data = os.urandom(SIZE)
    where = {
        "head": gw.function(vram="1GB", gpu_model=HEAD_MODEL, timeout="5m")(length),
        "node": gw.function(vram="1GB", gpu_model=node_model(node), timeout="5m")(length),
    }
    seconds: dict[str, list[float]] = {name: [] for name in where}
    with cluster.master.network():
        for _ in range(calls):
            for name, function in where.items():
                clock = time.perf_counter()
                assert function.remote(data) == SIZE
                seconds[name].append(time.perf_counter() - clock)
    return seconds


def death_to_running_elsewhere(cluster: Cluster, nodes: list[Node]) -> tuple[float, float, str]:
    """A job on one of ``nodes``, which is killed: seconds to NotReady and to the job Running
    on the other; the node killed."""
    models = [node_model(node) for node in nodes]
    function = gw.function(vram="8GB", gpu_model=models, timeout="5m", retries=2)(sleep_for)
    with cluster.master.network():
        handle = function.spawn(20.0)
        _wait_phase(handle, "Running")
        victim = next(node for node in nodes if node.name == handle.status().node)
        time.sleep(2.0)
        victim.kill()
        killed = time.monotonic()
        cluster.wait_node(victim.name, ready=False, timeout=120)
        not_ready = time.monotonic() - killed
        running = _wait_phase(handle, "Running", attempts=1) - killed
        assert handle.result(timeout=300) == 20.0
        assert handle.status().node != victim.name
    return not_ready, running, victim.name


def _p50(values: list[float]) -> float:
    return statistics.median(values)


def _mb_per_s(seconds: list[float]) -> float:
    return SIZE / MB / _p50(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--argument-calls", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    require_cluster_tools()
    sandbox_config()  # the default job image: every job runs in a container
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # as a user's own module
    began = time.monotonic()
    environment = {
        "GATEWAY_SIMULATED_GPU_VRAM_MB": "16384",
        "GATEWAY_SIMULATED_GPU_MODEL": HEAD_MODEL,
    }
    with running_cluster(environment=environment, prefix="gwc-bench-") as cluster:
        _say(began, "master up")
        master = cluster.master
        gw.configure(url=master.platform_url, api_key=master.admin_api_key())
        nodes = [cluster.add_node(), cluster.add_node()]
        joins = []
        for node in nodes:
            joins.append(join_to_first_job(cluster, node))
            _say(began, f"{node.name}: join-node.sh to its first job Running {joins[-1]:.1f} s")
        for node in nodes:
            cluster.wait_ray_worker(node)
        latency = submit_to_result(cluster, nodes[0], args.calls, args.warmup)
        _say(began, "submit to result p50: " + _fmt(latency, _p50, "{:.3f} s"))
        reads = reads_of_50_mb(cluster, nodes[0], args.rounds)
        _say(began, "50 MB reads, MB/s: " + _fmt(reads, _mb_per_s, "{:.1f}"))
        argument = argument_of_50_mb(cluster, nodes[0], args.argument_calls)
        _say(began, "50 MB argument p50: " + _fmt(argument, _p50, "{:.2f} s"))
        not_ready, moved, victim = death_to_running_elsewhere(cluster, nodes)
        _say(
            began,
            f"{victim} killed: NotReady {not_ready:.1f} s, job running elsewhere {moved:.1f} s",
        )
    text = _report(args, joins, latency, reads, argument, not_ready, moved)
    print(text)
    if not args.no_write:
        write_section("bench_cluster", text)


def _fmt(values: dict[str, list[float]], measure: Callable[[list[float]], float], form: str) -> str:
    return ", ".join(f"{name} {form.format(measure(seconds))}" for name, seconds in values.items())


def _report(
    args: argparse.Namespace,
    joins: list[float],
    latency: dict[str, list[float]],
    reads: dict[str, list[float]],
    argument: dict[str, list[float]],
    not_ready: float,
    moved: float,
) -> str:
    head, node = _p50(latency["head"]) * 1000, _p50(latency["node"]) * 1000
    arg_head, arg_node = _p50(argument["head"]), _p50(argument["node"])
    lines = [
        "## Several machines on one host (`bench/bench_cluster.py`)",
        "",
        f"{machine_line()}. The test cluster of namespaces (`tests/support/cluster`): master "
        "and nodes share this machine's cores; the mesh is userspace WireGuard (wireguard-go); "
        "heartbeat 1 s, NotReady after 4 s, a lost node's jobs requeued 2 s later "
        "(`GATEWAY_NODE_LOST_GRACE_SECONDS`; the defaults are 30 s and 60 s).",
        "",
        "| what | head | node over the mesh | ratio |",
        "| --- | --- | --- | --- |",
        f"| `.remote()` of a trivial function, submit to result, p50 ({args.calls} each, "
        f"{args.warmup} warm-up, alternated) | {head:.0f} ms | {node:.0f} ms "
        f"| {node / head:.2f}x |",
        f"| `.remote()` with a 50 MB argument, p50 ({args.argument_calls} each) "
        f"| {arg_head:.2f} s | {arg_node:.2f} s | {arg_node / arg_head:.2f}x |",
        "",
        "| node 1 reads 50 MB from the master | over the LAN directly | over the mesh | ratio |",
        "| --- | --- | --- | --- |",
    ]
    for how, what in (("tcp", "a raw TCP stream"), ("s3", "a GET from the S3 API")):
        lan, mesh = _mb_per_s(reads[f"{how} LAN"]), _mb_per_s(reads[f"{how} mesh"])
        lines.append(
            f"| {what}, MB/s of the p50 ({args.rounds} each, alternated) "
            f"| {lan:.0f} MB/s | {mesh:.0f} MB/s | {mesh / lan:.2f}x |"
        )
    lines += [
        "",
        "| what | seconds |",
        "| --- | --- |",
        *(
            f"| node {i}: `join-node.sh` starts to its first job Running | {seconds:.1f} |"
            for i, seconds in enumerate(joins, start=1)
        ),
        f"| a node killed mid-job (SIGKILL to its init) to NotReady | {not_ready:.1f} |",
        f"| a node killed mid-job to its job Running on the other node | {moved:.1f} |",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
