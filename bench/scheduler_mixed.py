"""A synthetic mixed trace: 1-8 GPU jobs of every size arriving at random, online vs offline.

The cluster is ``bench_scheduler.cluster``'s (nodes of 8 GPUs of one model, 24-192 GiB,
NVIDIA and AMD; a fifth of the nodes with 4 GPUs); the jobs its mix (1, 2, 4 or 8 GPUs at
70/15/10/5%, 1-80 GiB per GPU), 30% of them for any vendor and the others for NVIDIA or AMD
in proportion to each vendor's VRAM (``by_capacity``; else half each), drawn until the
demand reaches a fill of the cluster's VRAM (jobs no node could ever hold are drawn again).
Online: one pass per arrival, as the gateway places a job submitted to a busy cluster; a
job that does not fit then fails. Offline: first-fit-decreasing on the same jobs. Unlike the
planted traces this bench used before, no packing of the whole demand need exist, and the
multi-GPU jobs that arrive late find the free VRAM split across nodes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from bench.scheduler_cluster import (
    COUNT_WEIGHTS,
    COUNTS,
    GIB,
    SIZE_WEIGHTS,
    SIZES,
    cluster,
    first_fit_decreasing,
)
from gridweave_controller.vendors import Vendor
from job_gateway.inventory import Inventory
from job_gateway.scheduler import PlacementRequest, Policy, Scheduler

__all__ = ["FILLS", "mixed_trace", "online_vram", "ratios"]

FILLS = tuple(round(0.90 + 0.005 * i, 3) for i in range(19))


def mixed_trace(
    seed: int, fill: float, *, nodes: int = 100, by_capacity: bool = True
) -> tuple[Inventory, list[PlacementRequest]]:
    """The cluster and the jobs of one trace."""
    rng = random.Random(seed)
    inventory = cluster(rng, nodes, four_gpu_share=0.2)
    capacity = sum(gpu.vram_mb for gpu in inventory.gpus())
    nvidia = sum(gpu.vram_mb for gpu in inventory.gpus() if gpu.vendor == "nvidia") / capacity
    weights = (nvidia, 1 - nvidia) if by_capacity else (0.5, 0.5)
    scheduler = Scheduler(inventory)
    jobs: list[PlacementRequest] = []
    demand = 0
    while demand < fill * capacity:
        vendor: Vendor = "any" if rng.random() < 0.3 else rng.choices(("nvidia", "amd"), weights)[0]
        job = PlacementRequest(
            f"job-{len(jobs):06d}",
            rng.choices(SIZES, SIZE_WEIGHTS)[0] * GIB,
            rng.choices(COUNTS, COUNT_WEIGHTS)[0],
            vendor,
            submitted_at=float(len(jobs)),
        )
        if scheduler.check(job) is None:
            jobs.append(job)
            demand += job.vram_mb * job.gpu_count
    scheduler.close()
    return inventory, jobs


def online_vram(inventory: Inventory, jobs: Sequence[PlacementRequest], policy: Policy) -> int:
    """VRAM (MiB) placed with one pass per arrival."""
    scheduler = Scheduler(inventory, policy=policy)
    placed = 0
    for job in jobs:
        for placement in scheduler.schedule([job], now=job.submitted_at).placements:
            scheduler.allocations.put(placement.allocation(provisional=False))
            placed += job.vram_mb * job.gpu_count
    scheduler.close()
    return placed


def ratios(
    policies: Sequence[Policy], *, by_capacity: bool = True, nodes: int = 100
) -> dict[str, list[float]]:
    """Online / offline FFD VRAM per fill, for each policy (the same traces for all)."""
    found: dict[str, list[float]] = {policy: [] for policy in policies}
    for n, fill in enumerate(FILLS):
        inventory, jobs = mixed_trace(2000 + n, fill, nodes=nodes, by_capacity=by_capacity)
        offline = first_fit_decreasing(inventory, jobs)
        for policy in policies:
            found[policy].append(online_vram(inventory, jobs, policy) / offline)
    return found
