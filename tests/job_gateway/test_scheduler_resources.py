"""CPU, memory and GPU models in the scheduler: placement, waiting, impossibility, holds."""

from __future__ import annotations

import pytest

from job_gateway.scheduler import (
    AllocationMap,
    DefaultSlice,
    PlacementRequest,
    Scheduler,
    job_allocation,
    model_matches,
)
from tests.job_gateway.scheduling_factories import (
    GIB,
    endpoint_object,
    holding,
    job_object,
    make_inventory,
    make_node,
    request,
)


def _where(scheduler: Scheduler, *requests: PlacementRequest) -> dict[str, str]:
    decision = scheduler.schedule(list(requests), now=0.0)
    return {p.request.name: p.node for p in decision.placements}


class TestCpuAndMemory:
    @pytest.mark.parametrize("policy", ["fgd", "binpack", "spread"])
    def test_a_node_without_the_cpu_is_passed_over(self, policy: str) -> None:
        scheduler = Scheduler(
            make_inventory(
                make_node("a", [24 * GIB], cpu_millis=4_000),  # the tightest GPU, little CPU
                make_node("b", [80 * GIB], cpu_millis=64_000),
            ),
            policy=policy,  # type: ignore[arg-type]
        )
        assert _where(scheduler, request("r", 8 * GIB, cpu_millis=8_000)) == {"r": "b"}
        assert _where(scheduler, request("r", 8 * GIB, cpu_millis=4_000))["r"] in {"a", "b"}

    def test_memory_is_checked_the_same_way(self) -> None:
        scheduler = Scheduler(
            make_inventory(
                make_node("a", [24 * GIB], memory_mb=16 * GIB),
                make_node("b", [80 * GIB], memory_mb=512 * GIB),
            )
        )
        assert _where(scheduler, request("r", 8 * GIB, memory_mb=32 * GIB)) == {"r": "b"}

    def test_held_cpu_counts_and_a_request_waits_until_it_is_freed(self) -> None:
        scheduler = Scheduler(make_inventory(make_node("a", [80 * GIB] * 2, cpu_millis=16_000)))
        scheduler.allocations.put(holding("x", "a", [0], 10 * GIB, cpu_millis=12_000))
        assert scheduler.free_node("a") == (4_000, None)
        big = request("big", 10 * GIB, cpu_millis=8_000)
        decision = scheduler.schedule([big], now=0.0)
        assert decision.placements == () and decision.waiting == (big,)
        scheduler.allocations.remove(("job", "x"))
        assert _where(scheduler, big) == {"big": "a"}

    def test_placements_inside_a_pass_count_for_the_next(self) -> None:
        scheduler = Scheduler(make_inventory(make_node("a", [80 * GIB] * 4, cpu_millis=10_000)))
        requests = [request(f"r{i}", GIB, cpu_millis=4_000, at=i) for i in range(3)]
        decision = scheduler.schedule(requests, now=0.0)
        assert [p.request.name for p in decision.placements] == ["r0", "r1"]
        assert scheduler.free_node("a") == (10_000, None)  # a pass holds nothing after it

    def test_a_node_that_declares_nothing_has_no_limit(self) -> None:
        scheduler = Scheduler(make_inventory(make_node("a", [80 * GIB])))
        assert scheduler.free_node("a") == (None, None)
        huge = request("r", GIB, cpu_millis=10**9, memory_mb=10**9)
        assert scheduler.check(huge) is None and _where(scheduler, huge) == {"r": "a"}

    def test_impossible_cpu_names_the_most_a_node_with_such_gpus_has(self) -> None:
        scheduler = Scheduler(
            make_inventory(
                make_node("a", [80 * GIB] * 4, cpu_millis=32_000),
                make_node("b", [24 * GIB] * 8, cpu_millis=256_000),
            )
        )
        why = scheduler.check(request("r", 40 * GIB, 2, cpu_millis=64_000))
        assert why is not None and why.field == "cpu_millis" and why.most == 32_000
        assert "at most 32000 CPU millis" in why.message
        assert scheduler.check(request("r", 20 * GIB, 2, cpu_millis=64_000)) is None

    def test_impossible_memory(self) -> None:
        scheduler = Scheduler(make_inventory(make_node("a", [80 * GIB], memory_mb=64 * GIB)))
        why = scheduler.check(request("r", GIB, memory_mb=65 * GIB))
        assert why is not None and why.field == "memory_mb" and why.most == 64 * GIB
        decision = scheduler.schedule([request("r", GIB, memory_mb=65 * GIB)], now=0.0)
        assert [i.request.name for i in decision.impossible] == ["r"]

    def test_a_reservation_waits_only_where_the_node_could_hold_it(self) -> None:
        scheduler = Scheduler(
            make_inventory(
                make_node("a", [80 * GIB], cpu_millis=4_000),  # closest in VRAM, too little CPU
                make_node("b", [80 * GIB], cpu_millis=64_000),
            ),
            aging_s=10,
        )
        scheduler.allocations.put(holding("x", "a", [0], 10 * GIB))
        scheduler.allocations.put(holding("y", "b", [0], 70 * GIB))
        decision = scheduler.schedule([request("big", 80 * GIB, cpu_millis=8_000)], now=100)
        assert [r.node for r in decision.reservations.values()] == ["b"]


class TestHolds:
    def test_the_map_counts_cpu_memory_users_and_shapes(self) -> None:
        allocations = AllocationMap()
        allocations.put(holding("x", "a", [0, 1], 8 * GIB, cpu_millis=2_000, user="alice"))
        allocations.put(holding("y", "a", [2], 4 * GIB, kind="endpoint", memory_mb=GIB, user="bob"))
        assert allocations.node_held("a") == (2_000, GIB)
        assert allocations.endpoint_node_held("a") == (0, GIB)
        assert allocations.user_held("alice") == (16 * GIB, 2_000, 0)
        assert allocations.shape_counts() == {
            (2, 8 * GIB, "any"): (1, 2_000, 0),
            (1, 4 * GIB, "any"): (1, 0, GIB),
        }
        allocations.put(holding("x", "b", [0], 8 * GIB, cpu_millis=1_000, user="alice"))
        assert allocations.node_held("a") == (0, GIB) and allocations.node_held("b") == (1_000, 0)
        assert allocations.user_held("alice") == (8 * GIB, 1_000, 0)
        allocations.remove(("job", "x"))
        allocations.remove(("endpoint", "y"))
        assert allocations.node_held("a") == (0, 0) and allocations.user_held("bob") == (0, 0, 0)
        assert allocations.shape_counts() == {}

    def test_a_job_without_cpu_or_memory_holds_the_default_slice_per_gpu(self) -> None:
        job = job_object("j", phase="Running", node="a", gpu_indices=[0, 1], gpu_count=2)
        slice_ = DefaultSlice(cpu_millis_per_gpu=2_000, memory_mb_per_gpu=8 * GIB)
        allocation = job_allocation(job, slice_)
        assert allocation is not None
        assert (allocation.cpu_millis, allocation.memory_mb, allocation.user) == (
            4_000,
            16 * GIB,
            "alice",
        )
        asked = PlacementRequest.from_job(job_object("p", gpu_count=2), default_slice=slice_)
        assert (asked.cpu_millis, asked.memory_mb, asked.user) == (4_000, 16 * GIB, "alice")
        raw = job_object("q").raw
        raw["spec"] |= {"cpuMillis": 500, "memoryMb": 1024, "gpuModels": ["A100"]}
        named = PlacementRequest.from_job(job_object("q").model_copy(update={"raw": raw}))
        assert (named.cpu_millis, named.memory_mb, named.gpu_models) == (500, 1024, ("A100",))

    def test_an_endpoint_asks_for_every_replica(self) -> None:
        endpoint = endpoint_object("e", max_replicas=3)
        raw = endpoint.raw
        raw["spec"] |= {"cpuMillis": 1_000, "memoryMb": 2 * GIB}
        asked = PlacementRequest.from_endpoint(endpoint.model_copy(update={"raw": raw}))
        assert (asked.cpu_millis, asked.memory_mb) == (3_000, 6 * GIB)

    def test_negative_cpu_is_refused(self) -> None:
        with pytest.raises(ValueError, match="must not be negative"):
            request("r", GIB, cpu_millis=-1)


class TestGpuModels:
    @pytest.mark.parametrize(
        ("asked", "model", "matches"),
        [
            ("A100", "NVIDIA A100-SXM4-80GB", True),
            ("a100", "NVIDIA A100 80GB PCIe", True),
            ("A100 80GB", "NVIDIA A100-SXM4-80GB", True),
            ("A100 80GB", "NVIDIA A100-SXM4-40GB", False),
            ("T4", "NVIDIA T400", False),
            ("H100", "NVIDIA H100 80GB HBM3", True),
            ("MI300X", "AMD Instinct MI300X", True),
            ("--", "NVIDIA A100", False),
        ],
    )
    def test_whole_words_in_any_order(self, asked: str, model: str, matches: bool) -> None:
        assert model_matches(asked, model) is matches

    def _scheduler(self) -> Scheduler:
        return Scheduler(
            make_inventory(
                make_node("a", [40 * GIB] * 2, model="NVIDIA A100-SXM4-40GB"),
                make_node("h", [80 * GIB] * 2, model="NVIDIA H100 80GB HBM3"),
                make_node("m", [24 * GIB, 80 * GIB], model=None),
            )
        )

    @pytest.mark.parametrize("policy", ["fgd", "binpack", "spread"])
    def test_a_request_goes_only_to_a_model_it_names(self, policy: str) -> None:
        scheduler = self._scheduler()
        scheduler.policy = policy  # type: ignore[assignment]
        assert _where(scheduler, request("r", 8 * GIB, gpu_models=["H100"])) == {"r": "h"}
        assert _where(scheduler, request("r", 8 * GIB, gpu_models=["A100"])) == {"r": "a"}
        both = _where(scheduler, request("r", 60 * GIB, gpu_models=["A100", "H100"]))
        assert both == {"r": "h"}

    def test_several_gpus_are_of_one_model(self) -> None:
        scheduler = self._scheduler()  # node m: one 24 GiB and one 80 GiB GPU, two models
        decision = scheduler.schedule(
            [request("r", 8 * GIB, 2, gpu_models=["24GB", "80GB"])], now=0
        )
        (placement,) = decision.placements
        assert placement.node == "h"  # m has both models, but one GPU of each

    def test_no_gpu_of_the_model_is_impossible_naming_the_models_there_are(self) -> None:
        scheduler = self._scheduler()
        why = scheduler.check(request("r", GIB, gpu_models=["B200"]))
        assert why is not None and why.field == "gpu_models"
        assert "B200" in why.message and "NVIDIA H100 80GB HBM3" in why.message
        why = scheduler.check(request("r", 50 * GIB, gpu_models=["A100"]))
        assert why is not None and why.field == "vram_mb" and "A100" in why.message
        assert why.largest_gpu is not None and why.largest_gpu.node == "a"

    def test_an_empty_model_name_is_refused(self) -> None:
        with pytest.raises(ValueError, match="must not be empty"):
            request("r", GIB, gpu_models=[" "])
