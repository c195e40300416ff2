"""Invariants of the scheduler over random traces (seeded): checked against naive recounts.

Every pass of every trace: no GPU over its VRAM; a multi-GPU request all on one node, one
vendor, or nowhere; the vendor respected; only ready nodes and schedulable GPUs; impossible
exactly when no node could ever hold it; FIFO within the queue order except backfill (a
waiting request did not fit); reservations respected by lower-ranked work; the same input
(in any order, or rebuilt from scratch) gives the same decision; the incremental index
equals a fresh one.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable

import pytest

from gridweave_controller.vendors import GpuVendor, Vendor
from job_gateway.inventory import Gpu, Inventory, Node
from job_gateway.scheduler import (
    AllocationKey,
    AllocationMap,
    Decision,
    Kind,
    PlacementRequest,
    Policy,
    Reservation,
    Scheduler,
    rank_key,
)
from tests.job_gateway.scheduling_factories import GIB, holding

SIZES = (8 * GIB, 16 * GIB, 24 * GIB, 40 * GIB, 48 * GIB, 80 * GIB)
Free = dict[tuple[str, int], int]


def _inventory(rng: random.Random) -> Inventory:
    nodes = []
    for n in range(rng.randint(1, 7)):
        name = f"node-{rng.randint(0, 99):02d}-{n}"
        vendor: GpuVendor = rng.choice(("nvidia", "amd"))
        size = rng.choice(SIZES)
        gpus = tuple(
            Gpu(
                node=name,
                index=i,
                vendor=vendor
                if rng.random() < 0.9
                else ("amd" if vendor == "nvidia" else "nvidia"),
                model="m",
                vram_mb=size if rng.random() < 0.8 else rng.choice(SIZES),
                schedulable=rng.random() < 0.9,
            )
            for i in range(rng.choice((1, 2, 4, 8)))
        )
        nodes.append(Node(name=name, ready=rng.random() < 0.85, gpus=gpus))
    return Inventory(nodes=tuple(nodes))


def _request(rng: random.Random, serial: int, now: float) -> PlacementRequest:
    vendor: Vendor = rng.choice(("nvidia", "amd", "any"))
    return PlacementRequest(
        name=f"r{serial}",
        vram_mb=rng.choice((1, 2, 4, 6, 10, 20, 30, 45, 70, 90)) * GIB + rng.choice((0, 512)),
        gpu_count=rng.choice((1, 1, 1, 2, 2, 4, 8, 9)),
        vendor=vendor,
        priority=rng.choice((0, 0, 0, 1, 2)),
        submitted_at=now - rng.uniform(0, 200),
        kind=rng.choice(("job", "job", "endpoint")),
    )


def _gpus(inventory: Inventory) -> dict[tuple[str, int], tuple[Node, Gpu]]:
    return {(node.name, gpu.index): (node, gpu) for node in inventory.nodes for gpu in node.gpus}


def _free(inventory: Inventory, allocations: AllocationMap) -> Free:
    """Free VRAM per GPU, recounted from the allocations (not the scheduler's index)."""
    held: dict[tuple[str, int], int] = defaultdict(int)
    for allocation in allocations:
        for index in allocation.gpu_indices:
            held[(allocation.node, index)] += allocation.vram_mb
    return {key: gpu.vram_mb - held[key] for key, (_, gpu) in _gpus(inventory).items()}


def _accepts(vendor: Vendor) -> tuple[GpuVendor, ...]:
    return ("nvidia", "amd") if vendor == "any" else (vendor,)


def _fits(inventory: Inventory, free: Free, r: PlacementRequest) -> bool:
    """Naively: some ready node has gpu_count schedulable GPUs of one vendor with room."""
    for node in inventory.nodes:
        if not node.ready:
            continue
        for vendor in _accepts(r.vendor):
            room = [
                g
                for g in node.gpus
                if g.vendor == vendor and g.schedulable and free[(node.name, g.index)] >= r.vram_mb
            ]
            if len(room) >= r.gpu_count:
                return True
    return False


def _ever_fits(inventory: Inventory, r: PlacementRequest) -> bool:
    for node in inventory.nodes:
        for vendor in _accepts(r.vendor):
            big = [g for g in node.gpus if g.vendor == vendor and g.vram_mb >= r.vram_mb]
            if len(big) >= r.gpu_count:
                return True
    return False


def _check_pass(
    inventory: Inventory,
    allocations: AllocationMap,
    requests: list[PlacementRequest],
    decision: Decision,
) -> None:
    gpus = _gpus(inventory)
    before = _free(inventory, allocations)
    waiting_in = [r for r in requests if r.key not in allocations]
    by_key = {r.key: r for r in waiting_in}
    out = [p.key for p in decision.placements] + [i.request.key for i in decision.impossible]
    out += [r.key for r in decision.waiting]
    assert sorted(out) == sorted(by_key)  # every request answered exactly once
    for why in decision.impossible:
        assert not _ever_fits(inventory, why.request)
        assert why.largest_gpu is None or why.largest_gpu.vendor in _accepts(why.request.vendor)
    for r in decision.waiting:
        assert _ever_fits(inventory, r)

    after = dict(before)
    for p in decision.placements:
        r = p.request
        assert len(p.gpu_indices) == r.gpu_count == len(set(p.gpu_indices))
        placed = [gpus[(p.node, i)] for i in p.gpu_indices]
        assert all(node.ready and gpu.schedulable for node, gpu in placed)
        assert len({gpu.vendor for _, gpu in placed}) == 1  # never two vendors
        assert placed[0][1].vendor in _accepts(r.vendor)
        for i in p.gpu_indices:
            after[(p.node, i)] -= r.vram_mb
    for key, value in after.items():
        assert value >= min(0, before[key])  # nothing placed on a GPU that was already full

    # FIFO except backfill: a waiting request did not fit in what the requests ranked before
    # it left (placements, and the reservations of aged requests ranked before it).
    ranked_placements = sorted(decision.placements, key=lambda p: rank_key(p.request))
    for r in decision.waiting:
        free = dict(after)
        for reservation in decision.reservations.values():
            holder = by_key[reservation.key]
            if rank_key(holder) < rank_key(r):
                for i in reservation.gpu_indices:
                    free[(reservation.node, i)] -= holder.vram_mb
        assert not _fits(inventory, free, r), r

    # Reservations: lower-ranked placements leave the reserved VRAM on each reserved GPU.
    for reservation in decision.reservations.values():
        holder = by_key[reservation.key]
        assert holder in decision.waiting
        for i in reservation.gpu_indices:
            gpu = (reservation.node, i)
            node, device = gpus[gpu]
            assert node.ready and device.schedulable and device.vendor in _accepts(holder.vendor)
            free_at_holder = before[gpu]
            lower = 0
            for p in ranked_placements:
                if i not in p.gpu_indices or p.node != reservation.node:
                    continue
                if rank_key(p.request) < rank_key(holder):
                    free_at_holder -= p.request.vram_mb
                else:
                    lower += p.request.vram_mb
            for other in decision.reservations.values():
                other_holder = by_key[other.key]
                if rank_key(other_holder) < rank_key(holder) and gpu in (
                    (other.node, j) for j in other.gpu_indices
                ):
                    free_at_holder -= other_holder.vram_mb
            assert lower <= max(0, free_at_holder - holder.vram_mb)


def _rebuilt(allocations: AllocationMap) -> AllocationMap:
    """The same allocations, added in reverse order to a new map."""
    fresh = AllocationMap()
    for allocation in reversed(list(allocations)):
        fresh.put(allocation)
    return fresh


def _index_state(scheduler: Scheduler) -> tuple[object, ...]:
    index = scheduler._index  # the incremental structures themselves
    return (index.free, index.by_free, index.kth, index.profile, index.pool_free)


def _trace(seed: int, policy: Policy) -> Iterable[None]:
    rng = random.Random(seed)
    inventory = _inventory(rng)
    allocations = AllocationMap()
    for n in range(rng.randint(0, 12)):  # some work already running, within each GPU
        node = rng.choice(inventory.nodes)
        indices = rng.sample([g.index for g in node.gpus], rng.randint(1, len(node.gpus)))
        room = min(_free(inventory, allocations)[(node.name, i)] for i in indices)
        if room > 0:
            kind: Kind = rng.choice(("job", "endpoint"))
            allocations.put(holding(f"old{n}", node.name, indices, rng.randint(1, room), kind=kind))
    aging_s = rng.choice((0.0, 50.0, 1e9))
    scheduler = Scheduler(inventory, allocations, policy=policy, aging_s=aging_s)
    reservations: dict[AllocationKey, Reservation] = {}
    waiting: list[PlacementRequest] = []
    serial = 0
    now = 1000.0
    for _ in range(6):
        now += rng.uniform(1, 60)
        for _ in range(rng.randint(0, 25)):
            serial += 1
            waiting.append(_request(rng, serial, now))
        decision = scheduler.schedule(waiting, now=now, reservations=reservations)
        _check_pass(inventory, allocations, waiting, decision)
        # Determinism: any input order, a map rebuilt in another order, a fresh index.
        shuffled = rng.sample(waiting, len(waiting))
        assert scheduler.schedule(shuffled, now=now, reservations=reservations) == decision
        other = Scheduler(inventory, _rebuilt(allocations), policy=policy, aging_s=aging_s)
        assert other.schedule(waiting, now=now, reservations=reservations) == decision
        assert _index_state(other) == _index_state(scheduler)
        other.close()
        yield
        reservations = dict(decision.reservations)
        for placement in decision.placements:
            allocations.put(placement.allocation(provisional=rng.random() < 0.5))
        placed = {p.key for p in decision.placements}
        gone = {i.request.key for i in decision.impossible}
        waiting = [r for r in waiting if r.key not in placed | gone and rng.random() < 0.95]
        for allocation in list(allocations):  # some work ends
            if rng.random() < 0.3:
                allocations.remove(allocation.key)
        assert min(_free(inventory, allocations).values(), default=0) >= 0  # never over


@pytest.mark.parametrize("policy", ["binpack", "spread"])
@pytest.mark.parametrize("seed", range(60))
def test_random_trace(seed: int, policy: Policy) -> None:
    passes = sum(1 for _ in _trace(seed, policy))
    assert passes == 6


def test_the_traces_exercise_every_branch() -> None:
    """The random traces place (several GPUs too), backfill, reserve, and refuse requests."""
    seen: dict[str, int] = defaultdict(int)
    original = Scheduler.schedule

    def recording(self: Scheduler, *args: object, **kwargs: object) -> Decision:
        decision = original(self, *args, **kwargs)  # type: ignore[arg-type]
        seen["placed"] += len(decision.placements)
        seen["waiting"] += len(decision.waiting)
        seen["impossible"] += len(decision.impossible)
        seen["reserved"] += len(decision.reservations)
        seen["multi"] += sum(1 for p in decision.placements if len(p.gpu_indices) > 1)
        return decision

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Scheduler, "schedule", recording)
        for seed in range(20):
            for _ in _trace(seed, "binpack"):
                pass
    assert all(seen[k] > 20 for k in ("placed", "waiting", "impossible", "reserved", "multi")), seen
