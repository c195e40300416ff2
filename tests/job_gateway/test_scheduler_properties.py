"""Invariants of the scheduler over random traces (seeded): checked against naive recounts.

Every pass of every trace, for every policy: no GPU over its VRAM and no node over its CPU
or memory; a multi-GPU request all on one node, one vendor (one model when it names
models), or nowhere; the vendor and models respected; only ready nodes and schedulable GPUs;
impossible exactly when no node could ever hold it; tried in order (priority, reservation
holders first, then one user's requests oldest first) and none tried skipped except by
backfill (a waiting request did not fit in what was left when it was tried); reservations
respected by everything tried after them; the same input (in any order, or rebuilt from
scratch) gives the same decision; the incremental index equals a fresh one.
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
    model_matches,
    rank_key,
)
from tests.job_gateway.scheduling_factories import GIB, holding

SIZES = (8 * GIB, 16 * GIB, 24 * GIB, 40 * GIB, 48 * GIB, 80 * GIB)
MODELS = ("X100", "X200", "Y9")
Free = dict[tuple[str, int], int]
NodeFree = dict[str, tuple[int | None, int | None]]
POLICIES: tuple[Policy, ...] = ("fgd", "binpack", "spread")


def _inventory(rng: random.Random) -> Inventory:
    nodes = []
    for n in range(rng.randint(1, 7)):
        name = f"node-{rng.randint(0, 99):02d}-{n}"
        vendor: GpuVendor = rng.choice(("nvidia", "amd"))
        size = rng.choice(SIZES)
        model = rng.choice(MODELS)
        gpus = tuple(
            Gpu(
                node=name,
                index=i,
                vendor=vendor
                if rng.random() < 0.9
                else ("amd" if vendor == "nvidia" else "nvidia"),
                model=f"Maker {model if rng.random() < 0.85 else rng.choice(MODELS)}",
                vram_mb=size if rng.random() < 0.8 else rng.choice(SIZES),
                schedulable=rng.random() < 0.9,
            )
            for i in range(rng.choice((1, 2, 4, 8)))
        )
        cpu = rng.choice((None, 8_000, 32_000, 96_000))
        memory = rng.choice((None, 32 * GIB, 256 * GIB))
        nodes.append(
            Node(name=name, ready=rng.random() < 0.85, gpus=gpus, cpu_millis=cpu, memory_mb=memory)
        )
    return Inventory(nodes=tuple(nodes))


def _request(rng: random.Random, serial: int, now: float) -> PlacementRequest:
    vendor: Vendor = rng.choice(("nvidia", "amd", "any"))
    models: tuple[str, ...] = ()
    if rng.random() < 0.15:
        models = tuple(rng.sample(MODELS, rng.randint(1, 2)))
    return PlacementRequest(
        name=f"r{serial}",
        vram_mb=rng.choice((1, 2, 4, 6, 10, 20, 30, 45, 70, 90)) * GIB + rng.choice((0, 512)),
        gpu_count=rng.choice((1, 1, 1, 2, 2, 4, 8, 9)),
        vendor=vendor,
        priority=rng.choice((0, 0, 0, 1, 2)),
        submitted_at=now - rng.uniform(0, 200),
        kind=rng.choice(("job", "job", "endpoint")),
        cpu_millis=rng.choice((0, 0, 1_000, 4_000, 16_000, 40_000)),
        memory_mb=rng.choice((0, 0, 4 * GIB, 64 * GIB)),
        gpu_models=models,
        user=rng.choice(("alice", "bob", "carol")),
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


def _node_free(inventory: Inventory, allocations: AllocationMap) -> NodeFree:
    """Free CPU and memory per node (None: not declared), recounted from the allocations."""
    cpu: dict[str, int] = defaultdict(int)
    memory: dict[str, int] = defaultdict(int)
    for allocation in allocations:
        cpu[allocation.node] += allocation.cpu_millis
        memory[allocation.node] += allocation.memory_mb
    return {
        node.name: (
            None if node.cpu_millis is None else node.cpu_millis - cpu[node.name],
            None if node.memory_mb is None else node.memory_mb - memory[node.name],
        )
        for node in inventory.nodes
    }


def _accepts(vendor: Vendor) -> tuple[GpuVendor, ...]:
    return ("nvidia", "amd") if vendor == "any" else (vendor,)


def _groups(node: Node, r: PlacementRequest) -> list[list[Gpu]]:
    """The node's GPUs r may take together: one vendor, and one model when it names any."""
    groups = []
    for vendor in _accepts(r.vendor):
        gpus = [g for g in node.gpus if g.vendor == vendor]
        if not r.gpu_models:
            groups.append(gpus)
            continue
        for model in sorted({g.model for g in gpus}):
            if any(model_matches(asked, model) for asked in r.gpu_models):
                groups.append([g for g in gpus if g.model == model])
    return groups


def _room(have: int | None, asked: int) -> bool:
    return have is None or have >= asked


def _fits(inventory: Inventory, free: Free, node_free: NodeFree, r: PlacementRequest) -> bool:
    """Naively: some ready node has the CPU, memory and gpu_count schedulable GPUs of one
    vendor (and model) with room."""
    for node in inventory.nodes:
        cpu, memory = node_free[node.name]
        if not (node.ready and _room(cpu, r.cpu_millis) and _room(memory, r.memory_mb)):
            continue
        for gpus in _groups(node, r):
            room = [g for g in gpus if g.schedulable and free[(node.name, g.index)] >= r.vram_mb]
            if len(room) >= r.gpu_count:
                return True
    return False


def _ever_fits(inventory: Inventory, r: PlacementRequest) -> bool:
    for node in inventory.nodes:
        if not (_room(node.cpu_millis, r.cpu_millis) and _room(node.memory_mb, r.memory_mb)):
            continue
        for gpus in _groups(node, r):
            if len([g for g in gpus if g.vram_mb >= r.vram_mb]) >= r.gpu_count:
                return True
    return False


def _check_pass(
    inventory: Inventory,
    allocations: AllocationMap,
    requests: list[PlacementRequest],
    decision: Decision,
    previous: dict[AllocationKey, Reservation],
) -> None:
    gpus = _gpus(inventory)
    before = _free(inventory, allocations)
    node_before = _node_free(inventory, allocations)
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

    # The order tried: priority classes, highest first; in each, each user's requests in rank
    # order (the holders of a reservation of the last pass may come first).
    tried = list(decision.tried)
    assert sorted(tried) == sorted(
        [p.key for p in decision.placements] + [r.key for r in decision.waiting]
    )
    order = {key: i for i, key in enumerate(tried)}
    priorities = [by_key[key].priority for key in tried]
    assert priorities == sorted(priorities, reverse=True)
    for priority in set(priorities):
        keys = [key for key in tried if by_key[key].priority == priority]
        # each user's requests without a reservation to keep: oldest first
        for user in {by_key[key].user for key in keys}:
            mine = [by_key[k] for k in keys if by_key[k].user == user and k not in previous]
            assert mine == sorted(mine, key=rank_key)

    def tried_before(key: AllocationKey) -> tuple[Free, NodeFree]:
        """What was free when ``key`` was tried: placements and reservations before it."""
        free, node_free = dict(before), dict(node_before)
        held = [(p.request, p.node, p.gpu_indices) for p in decision.placements]
        held += [(by_key[k], v.node, v.gpu_indices) for k, v in decision.reservations.items()]
        for r, node, indices in held:
            if order[r.key] < order[key]:
                for i in indices:
                    free[(node, i)] -= r.vram_mb
                cpu, memory = node_free[node]
                node_free[node] = (
                    None if cpu is None else cpu - r.cpu_millis,
                    None if memory is None else memory - r.memory_mb,
                )
        return free, node_free

    after, node_after = dict(before), dict(node_before)
    for p in decision.placements:
        r = p.request
        assert len(p.gpu_indices) == r.gpu_count == len(set(p.gpu_indices))
        placed = [gpus[(p.node, i)] for i in p.gpu_indices]
        assert all(node.ready and gpu.schedulable for node, gpu in placed)
        assert len({gpu.vendor for _, gpu in placed}) == 1  # never two vendors
        assert placed[0][1].vendor in _accepts(r.vendor)
        if r.gpu_models:  # one model, one the request names
            assert len({gpu.model for _, gpu in placed}) == 1
            assert any(model_matches(asked, placed[0][1].model) for asked in r.gpu_models)
        for i in p.gpu_indices:
            after[(p.node, i)] -= r.vram_mb
        cpu, memory = node_after[p.node]
        node_after[p.node] = (
            None if cpu is None else cpu - r.cpu_millis,
            None if memory is None else memory - r.memory_mb,
        )
    for key, value in after.items():
        assert value >= min(0, before[key])  # nothing placed on a GPU that was already full
    for name, (cpu, memory) in node_after.items():
        cpu_before, memory_before = node_before[name]
        assert cpu is None or cpu_before is None or cpu >= min(0, cpu_before)
        assert memory is None or memory_before is None or memory >= min(0, memory_before)

    # Backfill only: a waiting request did not fit in what was left when it was tried.
    for r in decision.waiting:
        free, node_free = tried_before(r.key)
        assert not _fits(inventory, free, node_free, r), r

    # Reservations: what is tried after the holder leaves the reserved VRAM on each GPU.
    for reservation in decision.reservations.values():
        holder = by_key[reservation.key]
        assert holder in decision.waiting
        free, _ = tried_before(holder.key)
        for i in reservation.gpu_indices:
            gpu = (reservation.node, i)
            node, device = gpus[gpu]
            assert node.ready and device.schedulable and device.vendor in _accepts(holder.vendor)
            later = sum(
                p.request.vram_mb
                for p in decision.placements
                if p.node == reservation.node
                and i in p.gpu_indices
                and order[p.key] > order[holder.key]
            )
            assert later <= max(0, free[gpu] - holder.vram_mb)


def _rebuilt(allocations: AllocationMap) -> AllocationMap:
    """The same allocations, added in reverse order to a new map."""
    fresh = AllocationMap()
    for allocation in reversed(list(allocations)):
        fresh.put(allocation)
    return fresh


def _index_state(scheduler: Scheduler, pools: int = 4) -> tuple[object, ...]:
    """The incremental structures themselves (the base pools: a model's pool is made the
    first time a request names it, so two indexes may have made different ones)."""
    index = scheduler._index
    profiles = [p[:pools] for p in index.profile]
    return (
        index.free,
        index.cpu,
        index.memory,
        index.by_free[:pools],
        index.kth[:pools],
        profiles,
        index.pool_free[:pools],
    )


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
            old = holding(
                f"old{n}",
                node.name,
                indices,
                rng.randint(1, room),
                kind=kind,
                cpu_millis=rng.choice((0, 1_000, 4_000)),
                memory_mb=rng.choice((0, GIB)),
                user=rng.choice(("alice", "bob")),
            )
            allocations.put(old)
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
        _check_pass(inventory, allocations, waiting, decision, reservations)
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


@pytest.mark.parametrize("policy", POLICIES)
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
        seen["models"] += sum(1 for p in decision.placements if p.request.gpu_models)
        seen["cpu"] += sum(1 for p in decision.placements if p.request.cpu_millis)
        seen["users"] += len({p.request.user for p in decision.placements}) > 1
        return decision

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Scheduler, "schedule", recording)
        for seed in range(20):
            for _ in _trace(seed, "fgd"):
                pass
    kinds = ("placed", "waiting", "impossible", "reserved", "multi", "models", "cpu", "users")
    assert all(seen[k] > 20 for k in kinds), seen
