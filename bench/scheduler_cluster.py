"""The synthetic cluster and workload mix the scheduler benchmarks share.

Nodes of 8 GPUs of one model (a share of them of 4), drawn 20% RTX 4090 (24 GiB), 15% L40S
(48), 15% A100 (40), 20% H100 (80), 15% MI250X (64), 15% MI300X (192); requests of 1, 2, 4 or
8 GPUs (70/15/10/5%), 1 to 80 GiB per GPU (two thirds 1-16), vendor nvidia/amd/any
(50/20/30%), 5% endpoints, priorities 0/1/2 (80/15/5%); with ``resources``, nodes of 16
cores and 128 GiB per GPU and requests of 0.5-2 cores and 2-16 GiB per GPU they ask.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from gridweave_controller.vendors import GpuVendor, Vendor
from job_gateway.inventory import Gpu, Inventory, Node
from job_gateway.scheduler import PlacementRequest, Scheduler

__all__ = [
    "AGING_S",
    "COUNTS",
    "COUNT_WEIGHTS",
    "GIB",
    "MODELS",
    "SIZES",
    "SIZE_WEIGHTS",
    "VENDORS",
    "VENDOR_WEIGHTS",
    "cluster",
    "filled",
    "first_fit_decreasing",
    "workload",
]

GIB = 1024
#: (vendor, model, VRAM MiB, share of the nodes)
MODELS: tuple[tuple[GpuVendor, str, int, float], ...] = (
    ("nvidia", "NVIDIA GeForce RTX 4090", 24 * GIB, 0.20),
    ("nvidia", "NVIDIA L40S", 48 * GIB, 0.15),
    ("nvidia", "NVIDIA A100-SXM4-40GB", 40 * GIB, 0.15),
    ("nvidia", "NVIDIA H100 80GB HBM3", 80 * GIB, 0.20),
    ("amd", "AMD Instinct MI250X", 64 * GIB, 0.15),
    ("amd", "AMD Instinct MI300X", 192 * GIB, 0.15),
)
SIZES = (1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 40, 48, 64, 80)  # GiB per GPU
SIZE_WEIGHTS = (6, 10, 12, 8, 12, 8, 10, 6, 8, 6, 5, 4, 3, 2)
COUNTS, COUNT_WEIGHTS = (1, 2, 4, 8), (70, 15, 10, 5)
VENDORS: tuple[Vendor, ...] = ("nvidia", "amd", "any")
VENDOR_WEIGHTS = (50, 20, 30)
AGING_S = 300.0


def cluster(
    rng: random.Random, nodes: int, *, four_gpu_share: float = 0.0, resources: bool = False
) -> Inventory:
    """``nodes`` nodes of 8 GPUs (some of 4), one model each, drawn by MODELS' shares;
    with ``resources``, 16 cores and 128 GiB per GPU."""
    built = []
    for n in range(nodes):
        vendor, model, vram, _ = rng.choices(MODELS, weights=[m[3] for m in MODELS])[0]
        name = f"node-{n:04d}"
        count = 4 if rng.random() < four_gpu_share else 8
        gpus = tuple(
            Gpu(node=name, index=i, vendor=vendor, model=model, vram_mb=vram) for i in range(count)
        )
        built.append(
            Node(
                name=name,
                labels={"model": model},
                gpus=gpus,
                cpu_millis=16_000 * count if resources else None,
                memory_mb=128 * GIB * count if resources else None,
            )
        )
    return Inventory(nodes=tuple(built))


def workload(
    rng: random.Random, serial: int, now: float, *, resources: bool = False
) -> PlacementRequest:
    """One request of the mix: mostly small single-GPU jobs, some endpoints and big jobs;
    with ``resources``, 0.5-2 cores and 2-16 GiB per GPU (several share a GPU's VRAM)."""
    endpoint = rng.random() < 0.05
    request = PlacementRequest(
        name=f"{'ep' if endpoint else 'job'}-{serial:07d}",
        vram_mb=rng.choices(SIZES, weights=SIZE_WEIGHTS)[0] * GIB,
        gpu_count=rng.choices(COUNTS, weights=COUNT_WEIGHTS)[0],
        vendor=rng.choices(VENDORS, weights=VENDOR_WEIGHTS)[0],
        priority=rng.choices((0, 1, 2), weights=(80, 15, 5))[0],
        submitted_at=now - (rng.uniform(AGING_S, 2 * AGING_S) if rng.random() < 0.1 else 0.0),
        kind="endpoint" if endpoint else "job",
    )
    if not resources:
        return request
    return replace(
        request,
        cpu_millis=rng.randint(1, 4) * 500 * request.gpu_count,
        memory_mb=rng.choice((2, 4, 8, 16)) * GIB * request.gpu_count,
    )


def filled(
    inventory: Inventory, rng: random.Random, fill: float, *, resources: bool = False
) -> Scheduler:
    """A scheduler whose allocation map the workload filled to ``fill`` of the VRAM."""
    scheduler = Scheduler(inventory, aging_s=AGING_S)
    serial = 0
    while scheduler.allocation_rate() < fill:
        batch = []
        for _ in range(max(8, len(inventory.nodes) // 8)):
            serial += 1
            batch.append(workload(rng, serial, 0.0, resources=resources))
        decision = scheduler.schedule(batch, now=0.0)
        if not decision.placements:
            break
        for placement in decision.placements:
            scheduler.allocations.put(placement.allocation(provisional=False))
    return scheduler


def first_fit_decreasing(inventory: Inventory, requests: Sequence[PlacementRequest]) -> int:
    """VRAM (MiB) the offline first-fit-decreasing packing places."""
    nodes = sorted(inventory.nodes, key=lambda node: node.name)
    free = {(node.name, gpu.index): gpu.vram_mb for node in nodes for gpu in node.gpus}
    placed = 0
    for r in sorted(requests, key=lambda r: (-r.vram_mb * r.gpu_count, -r.vram_mb, r.name)):
        for node in nodes:
            by_vendor: dict[str, list[int]] = {}
            for gpu in node.gpus:
                if r.vendor in ("any", gpu.vendor) and free[(node.name, gpu.index)] >= r.vram_mb:
                    by_vendor.setdefault(gpu.vendor, []).append(gpu.index)
            chosen = next((ix for ix in by_vendor.values() if len(ix) >= r.gpu_count), None)
            if chosen is not None:
                for index in chosen[: r.gpu_count]:
                    free[(node.name, index)] -= r.vram_mb
                placed += r.vram_mb * r.gpu_count
                break
    return placed
