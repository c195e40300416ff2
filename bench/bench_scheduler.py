"""The scheduler, pure: decisions per second, and VRAM packed against first-fit-decreasing.

Run from the repository root: ``.venv/bin/python -m bench.bench_scheduler``. What it
measures is in ``DESCRIPTION``, which also heads its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence

from bench.report import machine_line, write_section
from gridweave_controller.vendors import GpuVendor, Vendor
from job_gateway.inventory import Gpu, Inventory, Node
from job_gateway.scheduler import Allocation, PlacementRequest, Scheduler

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

DESCRIPTION = """\
The cluster: nodes of 8 GPUs of one model, drawn 20% RTX 4090 (24 GiB), 15% L40S (48),
15% A100 (40), 20% H100 (80), 15% MI250X (64), 15% MI300X (192). The workload mix: 1, 2,
4 or 8 GPUs (70/15/10/5%), 1 to 80 GiB per GPU (two thirds 1-16), vendor nvidia/amd/any
(50/20/30%), 5% endpoints, priorities 0/1/2 (80/15/5%).

1. Decisions/s at 10, 100 and 1,000 nodes: the scheduler itself fills the allocation map
   to 80% of the VRAM with the mix; then a pass over 2,000 waiting requests of the mix (a
   tenth submitted more than `aging_s` = 300 s ago) is timed: first without reservations,
   then five times with the last pass's reservations passed back, as the gateway does (a
   pass holds nothing when it returns, so every repeat sees the same map). A decision is
   one request answered: placed, waiting (reserved or not) or impossible. Also: one
   request per pass (500 passes), an informer event (an allocation put, then removed), and
   the fragmentation of the waiting requests with the time to compute it.
2. VRAM allocation rate: for each fill f in 0.90, 0.905 ... 0.99, a 100-node cluster (a
   fifth of the nodes with 4 GPUs) gets jobs made by packing each node to f (some 2/4/8-GPU
   jobs first, then single-GPU jobs; 30% of them ask for any vendor), so a packing of the
   whole demand exists. Online: the jobs arrive in random order and one binpack pass places
   them. Offline bound: first-fit-decreasing (largest total VRAM first, each on the first
   node by name with room, its lowest-index GPUs). Rate = placed VRAM / cluster VRAM."""


def cluster(rng: random.Random, nodes: int, *, four_gpu_share: float = 0.0) -> Inventory:
    """``nodes`` nodes of 8 GPUs (some of 4), one model each, drawn by MODELS' shares."""
    built = []
    for n in range(nodes):
        vendor, model, vram, _ = rng.choices(MODELS, weights=[m[3] for m in MODELS])[0]
        name = f"node-{n:04d}"
        count = 4 if rng.random() < four_gpu_share else 8
        gpus = tuple(
            Gpu(node=name, index=i, vendor=vendor, model=model, vram_mb=vram) for i in range(count)
        )
        built.append(Node(name=name, labels={"model": model}, gpus=gpus))
    return Inventory(nodes=tuple(built))


def workload(rng: random.Random, serial: int, now: float) -> PlacementRequest:
    """One request of the mix: mostly small single-GPU jobs, some endpoints and big jobs."""
    endpoint = rng.random() < 0.05
    return PlacementRequest(
        name=f"{'ep' if endpoint else 'job'}-{serial:07d}",
        vram_mb=rng.choices(SIZES, weights=SIZE_WEIGHTS)[0] * GIB,
        gpu_count=rng.choices(COUNTS, weights=COUNT_WEIGHTS)[0],
        vendor=rng.choices(VENDORS, weights=VENDOR_WEIGHTS)[0],
        priority=rng.choices((0, 1, 2), weights=(80, 15, 5))[0],
        submitted_at=now - (rng.uniform(AGING_S, 2 * AGING_S) if rng.random() < 0.1 else 0.0),
        kind="endpoint" if endpoint else "job",
    )


def filled(inventory: Inventory, rng: random.Random, fill: float) -> Scheduler:
    """A scheduler whose allocation map the workload filled to ``fill`` of the VRAM."""
    scheduler = Scheduler(inventory, aging_s=AGING_S)
    serial = 0
    while scheduler.allocation_rate() < fill:
        batch = []
        for _ in range(max(8, len(inventory.nodes) // 8)):
            serial += 1
            batch.append(workload(rng, serial, 0.0))
        decision = scheduler.schedule(batch, now=0.0)
        if not decision.placements:
            break
        for placement in decision.placements:
            scheduler.allocations.put(placement.allocation(provisional=False))
    return scheduler


def decisions(nodes: int, repeats: int, queue_length: int) -> dict[str, object]:
    """Decisions/s of one pass over ``queue_length`` waiting requests on a filled cluster."""
    rng = random.Random(nodes)
    scheduler = filled(cluster(rng, nodes), rng, 0.80)
    now = 10_000.0
    queue = [workload(rng, 10**7 + i, now) for i in range(queue_length)]
    start = time.perf_counter()
    decision = scheduler.schedule(queue, now=now)  # cold: no reservation to keep yet
    cold = queue_length / (time.perf_counter() - start)
    times = []
    for _ in range(repeats):  # as the gateway runs it: the last pass's reservations passed back
        start = time.perf_counter()
        decision = scheduler.schedule(queue, now=now, reservations=decision.reservations)
        times.append(time.perf_counter() - start)
    single = queue[:500]
    start = time.perf_counter()
    for request in single:
        scheduler.schedule([request], now=now)
    one_by_one = len(single) / (time.perf_counter() - start)
    allocation = next(iter(scheduler.allocations))
    moved = Allocation("job", "bench-event", allocation.node, allocation.gpu_indices, GIB)
    start = time.perf_counter()
    for _ in range(1000):
        scheduler.allocations.put(moved)
        scheduler.allocations.remove(moved.key)
    event_us = (time.perf_counter() - start) / 2000 * 1e6
    start = time.perf_counter()
    fragmentation = scheduler.fragmentation(queue)
    fragmentation_ms = (time.perf_counter() - start) * 1e3
    median = statistics.median(times)
    return {
        "nodes": nodes,
        "gpus": sum(len(n.gpus) for n in scheduler.inventory.nodes),
        "allocations": len(scheduler.allocations),
        "rate": scheduler.allocation_rate(),
        "per_s": queue_length / median,
        "repeats": [queue_length / t for t in times],
        "placed": len(decision.placements),
        "waiting": len(decision.waiting),
        "reserved": len(decision.reservations),
        "impossible": len(decision.impossible),
        "one_by_one": one_by_one,
        "cold": cold,
        "event_us": event_us,
        "fragmentation": fragmentation.fraction,
        "fragmentation_ms": fragmentation_ms,
    }


def _asked(rng: random.Random, vendor: GpuVendor) -> Vendor:
    return vendor if rng.random() < 0.7 else "any"


def planted(rng: random.Random, inventory: Inventory, fill: float) -> list[PlacementRequest]:
    """Jobs made by packing every node to ``fill``: multi-GPU jobs first, then single ones."""
    jobs: list[tuple[int, int, Vendor]] = []
    for node in inventory.nodes:
        vendor = node.gpus[0].vendor
        free = {gpu.index: gpu.vram_mb for gpu in node.gpus}
        keep = {gpu.index: int(gpu.vram_mb * (1 - fill)) for gpu in node.gpus}

        for _ in range(rng.randint(0, 3)):
            count = rng.choice([c for c in (2, 4, 8) if c <= len(free)])
            chosen = sorted(free, key=lambda i: -free[i])[:count]
            room = min(free[i] - keep[i] for i in chosen)
            if room >= 2 * GIB:
                vram = min(rng.randint(8, room // 256) * 256, rng.choice(SIZES[4:]) * GIB)
                for i in chosen:
                    free[i] -= vram
                jobs.append((vram, count, _asked(rng, vendor)))
        for i in free:
            while (room := free[i] - keep[i]) >= GIB:
                vram = min(room, rng.choices(SIZES, weights=SIZE_WEIGHTS)[0] * GIB) // 256 * 256
                free[i] -= vram
                jobs.append((vram, 1, _asked(rng, vendor)))
    rng.shuffle(jobs)
    return [
        PlacementRequest(f"job-{i:06d}", vram, count, vendor, submitted_at=float(i))
        for i, (vram, count, vendor) in enumerate(jobs)
    ]


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


def packing(fills: Sequence[float], nodes: int) -> list[dict[str, float]]:
    """Online binpack vs offline FFD on one planted trace per fill."""
    rows = []
    for n, fill in enumerate(fills):
        rng = random.Random(1000 + n)
        inventory = cluster(rng, nodes, four_gpu_share=0.2)
        requests = planted(rng, inventory, fill)
        capacity = sum(gpu.vram_mb for gpu in inventory.gpus())
        decision = Scheduler(inventory).schedule(requests, now=0.0)
        online = sum(p.request.vram_mb * p.request.gpu_count for p in decision.placements)
        offline = first_fit_decreasing(inventory, requests)
        demand = sum(r.vram_mb * r.gpu_count for r in requests)
        rows.append(
            {
                "fill": fill,
                "jobs": len(requests),
                "demand": demand / capacity,
                "online": online / capacity,
                "ffd": offline / capacity,
                "ratio": online / offline,
            }
        )
    return rows


def main() -> None:
    """Run both parts, print them, and rewrite this benchmark's section of the docs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queue", type=int, default=2000)
    parser.add_argument("--no-write", action="store_true", help="print only")
    arguments = parser.parse_args()

    speed = [decisions(n, arguments.repeats, arguments.queue) for n in (10, 100, 1000)]
    fills = [round(0.90 + 0.005 * i, 3) for i in range(19)]
    pack = packing(fills, 100)
    lines = [
        "| nodes x GPUs | allocations held | VRAM held | decisions/s (median) | each repeat "
        "| first pass (no reservations yet) | placed / waiting / reserved / impossible "
        "| one request a pass, /s | informer event µs | fragmentation (ms to compute) |",
        "| --- | ---: | ---: | ---: | --- | ---: | --- | ---: | ---: | --- |",
    ]
    for s in speed:
        repeats = ", ".join(f"{v:,.0f}" for v in s["repeats"])  # type: ignore[attr-defined]
        lines.append(
            f"| {s['nodes']} x 8 | {s['allocations']:,} | {s['rate']:.1%} | {s['per_s']:,.0f} "
            f"| {repeats} | {s['cold']:,.0f} "
            f"| {s['placed']} / {s['waiting']} / {s['reserved']} / {s['impossible']} "
            f"| {s['one_by_one']:,.0f} | {s['event_us']:.1f} "
            f"| {s['fragmentation']:.1%} ({s['fragmentation_ms']:.0f} ms) |"
        )
    lines += [
        "",
        "| fill | jobs | demand / VRAM | online binpack | offline FFD | online / FFD |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in pack:
        lines.append(
            f"| {row['fill']:.3f} | {row['jobs']:,.0f} | {row['demand']:.4f} | {row['online']:.4f} "
            f"| {row['ffd']:.4f} | {row['ratio']:.4f} |"
        )
    ratios = [row["ratio"] for row in pack]
    at_1000 = speed[-1]["per_s"]
    summary = (
        f"Decisions/s at 1,000 nodes: {at_1000:,.0f} (goal >= 20,000). Online / FFD over "
        f"{len(pack)} traces: mean {statistics.mean(ratios):.4f} (goal >= 0.98), lowest "
        f"{min(ratios):.4f} (goal: none below 0.97)."
    )
    table = "\n".join(lines)
    print(table, "", summary, sep="\n")
    if not arguments.no_write:
        section = "\n\n".join(
            [
                "## Scheduler: decisions/s and VRAM packed vs first-fit-decreasing "
                "(`bench/bench_scheduler.py`)",
                f"{machine_line()} (2 shared cores).",
                DESCRIPTION,
                table,
                summary,
            ]
        )
        write_section("bench_scheduler", section)


if __name__ == "__main__":
    main()
