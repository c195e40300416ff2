"""Rehydration: a fresh gateway's start over 10,000 in-flight jobs, to ready.

Run from the repository root: ``.venv/bin/python -m bench.bench_rehydration``. Starts the
real Kubernetes API server (as the tests do) and kuberay-service as its own process,
creates ``--jobs`` GridweaveJobs once (concurrently; the setup is timed apart), allocates
each on a node and GPU of a static inventory of simulated 8 x 80 GiB nodes and moves every
other one to Running. Then, ``--runs`` times per transport (direct, then proxied, in turn),
a fresh :class:`~job_gateway.gateway.Gateway` starts exactly as the app starts it (the
inventory read, both informers list and sync, the allocation map rebuilt from what they
deliver) and is timed until ``start()`` returns: ready to schedule and serve. Each start's
map is checked against the CRDs (every job held, the VRAM of every GPU). Goal: <= 3 s.
Rewrites its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from bench.gateway_rig import (
    GPUS_PER_NODE,
    TOKEN,
    Transport,
    crd_client,
    create_concurrently,
    gateway_on,
    load_average,
    simulated_inventory,
)
from bench.report import machine_line, write_section
from gridweave_controller.models import Job
from gridweave_controller.operations import AsyncClientBase
from job_gateway.gateway import Gateway
from tests.support.killable_kuberay import KubeRayProcess
from tests.support.kubeapi import kube_api, namespace_on_cluster

GOAL_S = 3.0
NODES = 500
VRAM_MB = 8192


@dataclass(frozen=True)
class Start:
    """One fresh gateway's start."""

    transport: Transport
    seconds: float
    held: int
    load: str
    cpu_s: float


@dataclass(frozen=True)
class Setup:
    """How long making the in-flight jobs took."""

    jobs: int
    create_s: float
    allocate_s: float
    run_s: float


def placement(i: int) -> tuple[str, list[int]]:
    """Job ``i``'s node and GPU: spread over every GPU of the inventory."""
    return f"node-{i % NODES:04d}", [(i // NODES) % GPUS_PER_NODE]


async def make_in_flight(crd: AsyncClientBase, jobs: int) -> Setup:
    """``jobs`` jobs, all Allocated, every other one Running (concurrently, stage by stage)."""
    created: list[Job] = [None] * jobs  # type: ignore[list-item]

    def create(i: int) -> Callable[[], Awaitable[object]]:
        async def call() -> None:
            created[i] = await crd.create_job(
                f"job-{i:05d}", "bench", "file:///f.pkl", vram_mb=VRAM_MB
            )

        return call

    def allocate(i: int) -> Callable[[], Awaitable[object]]:
        node, gpus = placement(i)
        return lambda: crd.set_job_allocated(created[i].name, node, gpus, known=created[i])

    def run(i: int) -> Callable[[], Awaitable[object]]:
        return lambda: crd.set_job_running(created[i].name)

    create_s = await create_concurrently(create(i) for i in range(jobs))
    allocate_s = await create_concurrently(allocate(i) for i in range(jobs))
    run_s = await create_concurrently(run(i) for i in range(0, jobs, 2))
    return Setup(jobs, create_s, allocate_s, run_s)


def check_map(gateway: Gateway, jobs: int) -> int:
    """Every job held where its status says; the number held."""
    held = len(gateway.allocations)
    assert held == jobs, f"the map holds {held} jobs, not {jobs}"
    per_gpu = jobs // (NODES * GPUS_PER_NODE)
    node, gpus = placement(0)
    assert gateway.allocations.held_mb(node, gpus[0]) >= per_gpu * VRAM_MB
    return held


async def start_once(
    transport: Transport, kubeconfig: Path, namespace: str, url: str | None, jobs: int
) -> Start:
    """A fresh client and gateway; the seconds its start took."""
    async with crd_client(transport, kubeconfig, namespace, url) as crd:
        with tempfile.TemporaryDirectory(prefix="bench-rehydration-") as tmp:
            cpu = time.process_time()
            inventory = simulated_inventory(NODES)
            async with gateway_on(crd, inventory, Path(tmp), max_parallel_writes=32) as run:
                cpu = time.process_time() - cpu
                held = check_map(run.gateway, jobs)
    return Start(transport, run.start_seconds, held, load_average(), cpu)


async def run_all(args: argparse.Namespace) -> tuple[Setup, list[Start]]:
    """Set up once, then start fresh gateways, the transports in turn."""
    starts: list[Start] = []
    with kube_api() as api:
        namespace = f"bench-rehydrate-{uuid.uuid4().hex[:8]}"
        with namespace_on_cluster(api.kubeconfig, namespace, delete=False):
            async with crd_client("direct", api.kubeconfig, namespace, None) as crd:
                setup = await make_in_flight(crd, args.jobs)
            print(f"setup: {setup}", flush=True)
            with KubeRayProcess(api.kubeconfig, namespace, TOKEN) as kuberay:
                for _ in range(args.runs):
                    for transport in args.transports:
                        url = kuberay.url if transport == "proxied" else None
                        start = await start_once(
                            transport, api.kubeconfig, namespace, url, args.jobs
                        )
                        print(start, flush=True)
                        starts.append(start)
    return setup, starts


def report(setup: Setup, starts: list[Start]) -> str:
    """The Markdown section."""
    lines = [
        "## Job gateway: rehydration of in-flight jobs (`bench/bench_rehydration.py`)",
        "",
        f"{machine_line()}. The real apiserver + etcd on loopback; kuberay-service as its own "
        f"process. {setup.jobs:,} GridweaveJobs in flight (all Allocated, every other one "
        f"Running) spread over {NODES} simulated nodes x {GPUS_PER_NODE} GPUs; each row a "
        "fresh `Gateway.start()` as the app runs it: inventory read, both informers list and "
        "sync, the allocation map rebuilt from their events, the scheduling loop started. "
        f"Checked each time: the map holds every job. Goal <= {GOAL_S:.0f} s.",
        "",
        "| transport | start to ready s | jobs held | gateway CPU s | load |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {s.transport} | **{s.seconds:.2f}** | {s.held:,} | {s.cpu_s:.2f} | {s.load} |"
        for s in starts
    ]
    lines.append("")
    for transport in ("direct", "proxied"):
        times = [s.seconds for s in starts if s.transport == transport]
        if times:
            lines.append(
                f"{transport}: median {statistics.median(times):.2f} s, worst {max(times):.2f} s "
                f"over {len(times)} starts (goal <= {GOAL_S:.0f} s)."
            )
    lines += [
        "",
        f"Setup (once, not timed above; 64 calls in flight): create {setup.create_s:.1f} s, "
        f"allocate {setup.allocate_s:.1f} s, run every other one {setup.run_s:.1f} s.",
    ]
    return "\n".join(lines)


def main() -> None:
    """Run, print, and rewrite the section of docs/benchmarks.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--transports", nargs="+", default=["direct", "proxied"])
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    setup, starts = asyncio.run(run_all(args))
    section = report(setup, starts)
    print(section)
    if not args.no_write:
        write_section("bench_rehydration", section)


if __name__ == "__main__":
    main()
