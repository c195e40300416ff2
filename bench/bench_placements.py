"""End-to-end placements/s: Pending jobs placed and written Allocated by the real gateway.

Run from the repository root: ``.venv/bin/python -m bench.bench_placements``. Starts the
real Kubernetes API server (as the tests do) and kuberay-service as its own process. Each
measurement creates ``--jobs`` Pending GridweaveJobs in a fresh namespace (concurrently,
timed apart), then starts a :class:`~job_gateway.gateway.Gateway` on it exactly as the app
does (informers list and sync, then the scheduling loop runs) over a static inventory of
simulated 8 x 80 GiB nodes that can hold them all, and times from the end of ``start()``
until the informer has seen every job Allocated: placements/s = jobs / that time. Each
placement is the scheduler's decision, the provisional hold, the status write
(``set_job_allocated`` with the informer's copy) and the informer's event replacing the
hold. Measured on the direct transport and through kuberay-service, and for the curve
over ``GATEWAY_MAX_PARALLEL_WRITES``. Goal: >= 300/s. Rewrites its section of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from bench.gateway_rig import (
    TOKEN,
    Transport,
    crd_client,
    create_concurrently,
    gateway_on,
    load_average,
    simulated_inventory,
)
from bench.process_cpu import tree_cpu_seconds
from bench.report import machine_line, write_section
from gridweave_controller.errors import AlreadyExists, TransportError
from gridweave_controller.models import Job
from gridweave_controller.operations import AsyncClientBase
from gridweave_controller.phases import JobPhase
from job_gateway.scheduling import PassReport
from tests.support.killable_kuberay import KubeRayProcess
from tests.support.kubeapi import kube_api, namespace_on_cluster

GOAL = 300.0
#: VRAM per GPU (MiB) and GPU counts of the jobs, drawn with a fixed seed.
VRAM_CHOICES = (4096, 8192, 16384, 24576, 40960)
GPU_COUNTS = (1, 2, 4)
GPU_COUNT_WEIGHTS = (0.8, 0.15, 0.05)
#: 300 nodes x 8 x 80 GiB hold 5,000 such jobs at about 60% of their VRAM.
NODES = 300
FINISH_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Measurement:
    """One gateway placing one namespace's Pending jobs."""

    transport: Transport
    writes: int
    jobs: int
    setup_seconds: float
    sync_seconds: float
    #: From the end of start() until the last write's answer / the informer saw the last.
    written_seconds: float
    seen_seconds: float
    passes: int
    failed_writes: int
    load: str
    gateway_cpu_s: float
    kuberay_cpu_s: float | None

    @property
    def per_second(self) -> float:
        """Placements per second, the informer's view (every job seen Allocated)."""
        return self.jobs / self.seen_seconds


def job_shapes(jobs: int, seed: int) -> list[tuple[int, int]]:
    """(vram_mb, gpu_count) of each job."""
    rng = random.Random(seed)
    return [
        (rng.choice(VRAM_CHOICES), rng.choices(GPU_COUNTS, GPU_COUNT_WEIGHTS)[0])
        for _ in range(jobs)
    ]


async def create_jobs(crd: AsyncClientBase, jobs: int, seed: int) -> float:
    """``jobs`` Pending jobs, created concurrently through ``crd``; the seconds it took."""

    def create(i: int, vram_mb: int, gpu_count: int) -> Callable[[], Awaitable[object]]:
        async def call() -> None:
            name = f"job-{i:05d}"
            for attempt in range(3):  # a create is not resent once sent: setup resends it
                try:
                    await crd.create_job(
                        name, "bench", "file:///f.pkl", vram_mb=vram_mb, gpu_count=gpu_count
                    )
                    return
                except AlreadyExists:
                    return  # the lost answer's create was applied
                except TransportError:
                    if attempt == 2:
                        raise

        return call

    return await create_concurrently(
        create(i, vram, count) for i, (vram, count) in enumerate(job_shapes(jobs, seed))
    )


async def measure(
    transport: Transport,
    kubeconfig: Path,
    kuberay: KubeRayProcess | None,
    jobs: int,
    writes: int,
    seed: int,
) -> Measurement:
    """Create the jobs in a fresh namespace, then time a gateway placing them.

    The jobs are created through the measured transport, as the gateway's submit route
    creates them (through kuberay-service, which then knows each job's first version).
    """
    namespace = f"bench-place-{uuid.uuid4().hex[:8]}"
    with namespace_on_cluster(kubeconfig, namespace, delete=False):
        kuberay_url = None
        if kuberay is not None:
            kuberay.env["KUBERAY_NAMESPACE"] = namespace
            kuberay.start()
            kuberay_url = kuberay.url
        try:
            async with crd_client(transport, kubeconfig, namespace, kuberay_url) as crd:
                setup = await create_jobs(crd, jobs, seed)
            return await _place(
                transport, kubeconfig, namespace, kuberay, kuberay_url, jobs, writes, setup
            )
        finally:
            if kuberay is not None:
                kuberay.kill()


async def _place(
    transport: Transport,
    kubeconfig: Path,
    namespace: str,
    kuberay: KubeRayProcess | None,
    kuberay_url: str | None,
    jobs: int,
    writes: int,
    setup: float,
) -> Measurement:
    done = asyncio.Event()
    allocated: set[str] = set()
    reports: list[tuple[float, PassReport]] = []

    def seen(_old: Job, new: Job) -> None:
        if new.phase is JobPhase.ALLOCATED:
            allocated.add(new.name)
            if len(allocated) >= jobs:
                done.set()

    inventory = simulated_inventory(NODES)
    with tempfile.TemporaryDirectory(prefix="bench-placements-") as tmp:
        async with crd_client(transport, kubeconfig, namespace, kuberay_url) as crd:
            cpu_before = time.process_time()
            kuberay_before = tree_cpu_seconds(kuberay.pid) if kuberay else 0.0
            async with gateway_on(crd, inventory, Path(tmp), max_parallel_writes=writes) as run:
                started = time.perf_counter()
                run.gateway.jobs.add_handlers(on_update=seen)
                run.gateway.loop.on_pass(lambda r: reports.append((time.perf_counter(), r)))
                async with asyncio.timeout(FINISH_TIMEOUT_S):
                    await done.wait()
                    seen_seconds = time.perf_counter() - started
                    while sum(r.written for _, r in reports) < jobs:  # the pass ends after
                        await asyncio.sleep(0.01)
            gateway_cpu = time.process_time() - cpu_before
            kuberay_cpu = tree_cpu_seconds(kuberay.pid) - kuberay_before if kuberay else None
    last_write = max((t for t, r in reports if r.written), default=started)
    return Measurement(
        transport=transport,
        writes=writes,
        jobs=jobs,
        setup_seconds=setup,
        sync_seconds=run.start_seconds,
        written_seconds=last_write - started,
        seen_seconds=seen_seconds,
        passes=len(reports),
        failed_writes=sum(r.failed for _, r in reports),
        load=load_average(),
        gateway_cpu_s=gateway_cpu,
        kuberay_cpu_s=kuberay_cpu,
    )


def _row(m: Measurement) -> str:
    kuberay = "-" if m.kuberay_cpu_s is None else f"{m.kuberay_cpu_s:.1f}"
    return (
        f"| {m.transport} | {m.writes} | {m.jobs:,} | **{m.per_second:,.0f}** | "
        f"{m.jobs / m.written_seconds:,.0f} | {m.seen_seconds:.2f} | {m.sync_seconds:.2f} | "
        f"{m.setup_seconds:.1f} | {m.passes} | {m.failed_writes} | {m.gateway_cpu_s:.1f} | "
        f"{kuberay} | {m.load} |"
    )


def report(main: list[Measurement], curve: list[Measurement]) -> str:
    """The Markdown section: the runs at the default, then the curve."""
    header = (
        "| transport | writes in flight | jobs | placements/s (seen) | placements/s "
        "(written) | seconds | start (list + sync) s | setup s | passes | failed writes | "
        "gateway CPU s | kuberay-service CPU s | load |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: |"
    )
    lines = [
        "## Job gateway: end-to-end placements/s (`bench/bench_placements.py`)",
        "",
        f"{machine_line()}. The real apiserver + etcd on loopback; kuberay-service as its "
        f"own process. Each row: Pending jobs created concurrently in a fresh namespace "
        f"(setup, not timed), a `Gateway` started as the app starts it on {NODES} simulated "
        "nodes x 8 x 80 GiB, timed from the end of `start()` until its informer saw every job "
        "Allocated (*seen*; *written*: until the last `set_job_allocated` answered). Goal "
        f">= {GOAL:.0f}/s.",
        "",
        header,
        *(_row(m) for m in main),
    ]
    for transport in ("direct", "proxied"):
        rates = [m.per_second for m in main if m.transport == transport]
        if rates:
            lines.append("")
            lines.append(
                f"{transport}: median {statistics.median(rates):,.0f}/s over {len(rates)} runs"
                f" (goal >= {GOAL:.0f}/s)."
            )
    lines += [
        "",
        "Proxied writes go together when more than 4 are in flight (`POST /v1/crd/batch`, "
        "`gridweave_clients.kuberay_batches`). Before that, on the same machine, proxied ran "
        "at 114-143/s, the gateway spending 25-29 CPU-seconds per 5,000 placements "
        "(about 5 ms each, most of it in the HTTP request) and kuberay-service 11-12.",
    ]
    if curve:
        lines += [
            "",
            "Writes in flight (`GATEWAY_MAX_PARALLEL_WRITES`), one run each, same run:",
            "",
            header,
        ]
        lines += [_row(m) for m in curve]
    return "\n".join(lines)


async def run_all(args: argparse.Namespace) -> tuple[list[Measurement], list[Measurement]]:
    """Every measurement, on one apiserver."""
    main: list[Measurement] = []
    curve: list[Measurement] = []
    with kube_api() as api:
        kuberay = KubeRayProcess(api.kubeconfig, "gridweave", TOKEN)
        for run in range(args.runs):
            for transport in args.transports:
                proxy = kuberay if transport == "proxied" else None
                m = await measure(transport, api.kubeconfig, proxy, args.jobs, args.writes, run)
                print(_row(m), flush=True)
                main.append(m)
        for writes in args.curve:
            for transport in args.curve_transports:
                proxy = kuberay if transport == "proxied" else None
                m = await measure(transport, api.kubeconfig, proxy, args.curve_jobs, writes, 100)
                print(_row(m), flush=True)
                curve.append(m)
    return main, curve


def main() -> None:
    """Run, print, and rewrite the section of docs/benchmarks.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--writes", type=int, default=32)
    parser.add_argument("--transports", nargs="+", default=["direct", "proxied"])
    parser.add_argument("--curve", type=int, nargs="*", default=[])
    parser.add_argument("--curve-transports", nargs="+", default=["direct"])
    parser.add_argument("--curve-jobs", type=int, default=2000)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    main_runs, curve = asyncio.run(run_all(args))
    section = report(main_runs, curve)
    print(section)
    if not args.no_write:
        write_section("bench_placements", section)


if __name__ == "__main__":
    main()
