"""What the gateway's metrics and usage bookkeeping add to a pass and to a boot.

Run from the repository root: ``.venv/bin/python -m bench.bench_gateway_metrics``. What it
measures is in ``DESCRIPTION``, which also heads its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from typing import Any

from prometheus_client import CollectorRegistry

from bench.report import machine_line, write_section
from bench.scheduler_cluster import cluster, filled, workload
from gridweave_controller.models import Job
from job_gateway.metrics import CAPACITY_EVERY_S, CAPACITY_SHARE, GatewayMetrics
from job_gateway.scheduling import PassReport
from job_gateway.usage import is_due

DESCRIPTION = """\
1. `GatewayMetrics.observe_pass`, the scheduling loop's pass listener, on 1,000 nodes x 8
   GPUs filled to 80% by bench_scheduler's workload mix, with 5,000 waiting requests of
   that mix and the placements of one pass over them: the per-pass part (counters, the
   latency of each placement, the queue by priority; the placements held as the loop holds
   them), and one capacity measurement (fragmentation of the queue and the VRAM allocation
   rate), each the median of the repeats, next to the pass itself (`Scheduler.schedule`).
   A capacity measurement runs at most once a second and within 5% of the loop's time, so
   a slower one comes less often ("measured every").
2. `usage.is_due` over 10,000 finished jobs as the informer's first list hands them over
   (half marked UsageReported, raw objects parsed on first use as the informer's are): the
   cost a boot pays to find the reports a crash left unsent."""


def pass_costs(nodes: int, queue_length: int, repeats: int) -> dict[str, float]:
    """Milliseconds of a pass, of the listener's per-pass part and of the capacity part."""
    rng = random.Random(nodes)
    scheduler = filled(cluster(rng, nodes), rng, 0.80)
    now = 10_000.0
    queue = [workload(rng, 10**7 + i, now) for i in range(queue_length)]
    started = time.perf_counter()
    decision = scheduler.schedule(queue, now=now)
    schedule_ms = (time.perf_counter() - started) * 1e3
    for placement in decision.placements:  # held, as the loop holds them before writing
        scheduler.allocations.put(placement.allocation())
    report = PassReport(decision, len(decision.placements), 0, schedule_ms / 1e3)

    async def listener_ms() -> list[float]:
        metrics = GatewayMetrics(CollectorRegistry(), clock=lambda: now + 1.0)
        metrics.observe_pass(report, waiting=queue, scheduler=scheduler)  # measures capacity
        times = []
        for _ in range(repeats):  # within the capacity window: the per-pass part alone
            started = time.perf_counter()
            metrics.observe_pass(report, waiting=queue, scheduler=scheduler)
            times.append((time.perf_counter() - started) * 1e3)
        metrics.close()
        return times

    per_pass = asyncio.run(listener_ms())
    queued = [request for request in queue if request.key not in scheduler.allocations]
    capacity = []
    for _ in range(repeats):  # what one capacity measurement runs
        started = time.perf_counter()
        scheduler.fragmentation(queued)
        scheduler.allocation_rate()
        capacity.append((time.perf_counter() - started) * 1e3)
    capacity_ms = statistics.median(capacity)
    return {
        "nodes": nodes,
        "queue": queue_length,
        "placed": len(decision.placements),
        "schedule_ms": schedule_ms,
        "per_pass_ms": statistics.median(per_pass),
        "capacity_ms": capacity_ms,
        "capacity_every_s": max(CAPACITY_EVERY_S, capacity_ms / 1e3 / CAPACITY_SHARE),
    }


def finished_job(serial: int, marked: bool) -> Job:
    """A Completed job on one GPU as the apiserver returns it; marked or not."""
    conditions: list[dict[str, Any]] = [
        {
            "type": "Finished",
            "status": "True",
            "reason": "Completed",
            "message": "",
            "lastTransitionTime": "2026-12-03T08:00:00Z",
        }
    ]
    if marked:
        conditions.append(
            {
                "type": "UsageReported",
                "status": "True",
                "reason": "Reported",
                "message": str(serial),
                "lastTransitionTime": "2026-12-03T08:00:01Z",
            }
        )
    return Job.from_raw(
        {
            "apiVersion": "gridweave.io/v1",
            "kind": "GridweaveJob",
            "metadata": {"name": f"job-{serial:07d}", "resourceVersion": str(serial)},
            "spec": {"userId": "alice", "functionRef": "file:///f.pkl", "vramMb": 8192},
            "status": {
                "phase": "Completed",
                "node": "node-0001",
                "gpuIndices": [serial % 8],
                "wallSeconds": 12.5,
                "billedSeconds": 13,
                "conditions": conditions,
            },
        }
    )


def boot_cost(jobs: int) -> dict[str, float]:
    """Seconds for is_due over ``jobs`` finished jobs, half of them marked."""
    listed = [finished_job(i, marked=i % 2 == 0) for i in range(jobs)]
    started = time.perf_counter()
    due = sum(is_due(job) for job in listed)
    seconds = time.perf_counter() - started
    return {"jobs": jobs, "due": due, "seconds": seconds}


def main() -> None:
    """Run both parts, print them, and rewrite this benchmark's section of the docs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print only")
    arguments = parser.parse_args()
    costs = pass_costs(1000, 5000, arguments.repeats)
    boot = boot_cost(10_000)
    table = "\n".join(
        [
            "| nodes x GPUs | waiting | placed by the pass | the pass (ms) "
            "| listener per pass (ms) | capacity measurement (ms) | measured every (s) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| {costs['nodes']:.0f} x 8 | {costs['queue']:,.0f} | {costs['placed']:,.0f} "
            f"| {costs['schedule_ms']:.1f} | {costs['per_pass_ms']:.2f} "
            f"| {costs['capacity_ms']:.1f} | {costs['capacity_every_s']:.1f} |",
            "",
            "| finished jobs listed | due (unmarked) | is_due for all (ms) | per job (µs) |",
            "| ---: | ---: | ---: | ---: |",
            f"| {boot['jobs']:,.0f} | {boot['due']:,.0f} | {boot['seconds'] * 1e3:.1f} "
            f"| {boot['seconds'] / boot['jobs'] * 1e6:.1f} |",
        ]
    )
    print(table)
    if not arguments.no_write:
        section = "\n\n".join(
            [
                "## Gateway metrics and usage bookkeeping (`bench/bench_gateway_metrics.py`)",
                f"{machine_line()} (2 shared cores).",
                DESCRIPTION,
                table,
            ]
        )
        write_section("bench_gateway_metrics", section)


if __name__ == "__main__":
    main()
