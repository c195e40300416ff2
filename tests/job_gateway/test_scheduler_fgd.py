"""The fragmentation-aware policy: its workload, its measure against FGD's definition, and
the placements that set it apart from binpack."""

from __future__ import annotations

import random

import pytest

from job_gateway.inventory import Gpu, Inventory, Node
from job_gateway.scheduler import PlacementRequest, Scheduler
from job_gateway.scheduler import fgd as fgd_module
from job_gateway.scheduler.fgd import TargetWorkload, target_workload
from tests.job_gateway.scheduling_factories import GIB, holding, make_inventory, make_node, request


class TestTargetWorkload:
    def test_classes_group_shapes_with_their_mean_cpu_and_memory(self) -> None:
        held = {(1, 8 * GIB, "any"): (3, 6_000, 3 * GIB), (4, 80 * GIB, "any"): (1, 32_000, 0)}
        waiting = [request("r", 8 * GIB, cpu_millis=2_000, memory_mb=GIB)]
        w, amd = target_workload(held, waiting)
        assert w == amd  # every class accepts either vendor
        assert w.single == ((8 * GIB, 2_000, GIB, 0.8),)
        assert w.multi == ((4, 80 * GIB, 32_000, 0, 0.2),)
        assert (w.cpu, w.memory) == (32_000, GIB)
        assert w.needs == (8 * GIB,) and w.cum == (0.0, 0.8)

    def test_a_vendors_gpus_count_the_classes_that_accept_it(self) -> None:
        held = {(1, 8 * GIB, "nvidia"): (3, 0, 0), (1, 8 * GIB, "any"): (1, 0, 0)}
        nvidia, amd = target_workload(held, [request("r", 16 * GIB, vendor="amd")])
        assert nvidia.single == ((8 * GIB, 0, 0, 0.2), (8 * GIB, 0, 0, 0.6))
        assert amd.single == ((8 * GIB, 0, 0, 0.2), (16 * GIB, 0, 0, 0.2))

    def test_the_classes_of_most_demand_are_kept(self) -> None:
        held = {(1, n * GIB, "any"): (10, 0, 0) for n in range(1, 21)}
        held[(8, 80 * GIB, "any")] = (1, 0, 0)  # rare, but the most VRAM of all
        w, _ = target_workload(held, [], limit=4)
        assert [c[0] for c in w.single] == [18 * GIB, 19 * GIB, 20 * GIB]
        assert w.multi[0][:2] == (8, 80 * GIB)
        assert sum(c[-1] for c in w.single) + w.multi[0][-1] == pytest.approx(1.0)


def _fragmentation(frees: list[int], cpu: int, memory: int, w: TargetWorkload) -> float:
    """FGD's node fragmentation by its definition: sum_m p_m (fits ? free below need : all)."""
    total = sum(frees)
    result = 0.0
    for need, c, m, p in w.single:
        fits = c <= cpu and m <= memory and any(f >= need for f in frees)
        result += p * (sum(f for f in frees if f < need) if fits else total)
    for count, need, c, m, p in w.multi:
        fits = c <= cpu and m <= memory and sum(1 for f in frees if f >= need) >= count
        result += p * (sum(f for f in frees if f < need) if fits else total)
    return result


def _random_state(rng: random.Random) -> tuple[Inventory, Scheduler]:
    nodes = []
    for n in range(rng.randint(2, 6)):
        name = f"n{n}"
        count = rng.choice((1, 2, 4))
        size = rng.choice((24, 40, 80)) * GIB
        gpus = tuple(
            Gpu(node=name, index=i, vendor="nvidia", model="m", vram_mb=size) for i in range(count)
        )
        cpu = rng.choice((None, 16_000, 64_000))
        nodes.append(Node(name=name, gpus=gpus, cpu_millis=cpu, memory_mb=None))
    inventory = Inventory(nodes=tuple(nodes))
    scheduler = Scheduler(inventory)
    for i in range(rng.randint(0, 8)):
        node = rng.choice(nodes)
        gpu = rng.choice(node.gpus)
        free = scheduler.free_mb(node.name, gpu.index) or 0
        if free >= GIB:
            cpu = rng.choice((0, 2_000, 8_000))
            scheduler.allocations.put(
                holding(
                    f"old{i}",
                    node.name,
                    [gpu.index],
                    rng.randint(1, free // GIB) * GIB,
                    cpu_millis=cpu,
                )
            )
    return inventory, scheduler


class TestTheMeasure:
    """With every candidate looked at, the choice is FGD's: the least growth of FGD's own
    fragmentation (ties aside), checked against a recount from the definition."""

    @pytest.mark.parametrize("seed", range(40))
    def test_the_choice_is_the_least_growth_of_fragmentation(
        self, seed: int, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(fgd_module, "BREADTH", 10_000)
        monkeypatch.setattr(fgd_module, "NODES", 10_000)
        rng = random.Random(seed)
        inventory, scheduler = _random_state(rng)
        r = PlacementRequest(
            "r",
            rng.choice((4, 8, 16, 20, 24, 40)) * GIB,
            rng.choice((1, 1, 2)),
            cpu_millis=rng.choice((0, 4_000, 12_000)),
        )
        w, _ = target_workload(scheduler.allocations.shape_counts(), [r])  # NVIDIA's view
        decision = scheduler.schedule([r], now=0.0)
        nodes = {node.name: node for node in inventory.nodes}

        def growth(node: str, indices: tuple[int, ...]) -> float:
            gpus = nodes[node].gpus
            frees = [scheduler.free_mb(node, g.index) or 0 for g in gpus]
            cpu, memory = scheduler.free_node(node)
            cpu = 10**12 if cpu is None else cpu
            memory = 10**12 if memory is None else memory
            after = [
                f - r.vram_mb if g.index in indices else f for f, g in zip(frees, gpus, strict=True)
            ]
            before = _fragmentation(frees, cpu, memory, w)
            return _fragmentation(after, cpu - r.cpu_millis, memory - r.memory_mb, w) - before

        options = []
        for node in inventory.nodes:
            cpu, _ = scheduler.free_node(node.name)
            if cpu is not None and cpu < r.cpu_millis:
                continue
            fitting = sorted(
                (scheduler.free_mb(node.name, g.index) or 0, g.index)
                for g in node.gpus
                if (scheduler.free_mb(node.name, g.index) or 0) >= r.vram_mb
            )
            if r.gpu_count == 1:
                options += [growth(node.name, (i,)) for _, i in fitting]
            elif len(fitting) >= r.gpu_count:  # each node's tightest GPUs
                options.append(growth(node.name, tuple(i for _, i in fitting[: r.gpu_count])))
        if not options:
            assert decision.placements == ()
            return
        (placement,) = decision.placements
        assert growth(placement.node, placement.gpu_indices) == pytest.approx(min(options))


class TestWhatItDoesBetter:
    def test_it_keeps_the_cpu_that_the_common_jobs_need(self) -> None:
        """Two nodes with room; the one with less CPU would be left with too
        little for the common class; binpack takes it (first by name), fgd does not."""
        inventory = make_inventory(
            make_node("a", [80 * GIB] * 2, cpu_millis=16_000),
            make_node("b", [80 * GIB] * 2, cpu_millis=96_000),
        )
        common = [holding(f"c{i}", "z", [0], 80 * GIB, cpu_millis=8_000) for i in range(5)]
        placements = {}
        for policy in ("binpack", "fgd"):
            scheduler = Scheduler(inventory, policy=policy)
            for allocation in common:  # the workload: whole GPUs with 8 cores each
                scheduler.allocations.put(allocation)
            heavy = request("heavy", 80 * GIB, cpu_millis=12_000)
            (placement,) = scheduler.schedule([heavy], now=0.0).placements
            placements[policy] = placement.node
        assert placements == {"binpack": "a", "fgd": "b"}

    def test_it_leaves_a_remainder_the_common_jobs_fit(self) -> None:
        """A 40 GiB job: on the 48 GiB GPU it leaves 8 GiB nobody asks; on the 80 GiB one it
        leaves 40 GiB, what most jobs ask. binpack takes the tighter; fgd the useful one."""
        inventory = make_inventory(make_node("a", [48 * GIB]), make_node("b", [80 * GIB]))
        chosen = {}
        for policy in ("binpack", "fgd"):
            scheduler = Scheduler(inventory, policy=policy)
            for i in range(6):
                scheduler.allocations.put(holding(f"w{i}", "z", [0], 40 * GIB))
            (placement,) = scheduler.schedule([request("r", 40 * GIB)], now=0.0).placements
            chosen[policy] = placement.node
        assert chosen == {"binpack": "a", "fgd": "b"}
