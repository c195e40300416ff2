"""The scheduler's placement rule, case by case."""

from __future__ import annotations

import pytest

from job_gateway.inventory import Node
from job_gateway.scheduler import (
    REAL_GPU_BUSY,
    AllocationMap,
    Decision,
    PlacementRequest,
    Policy,
    Scheduler,
    schedule,
)
from tests.job_gateway.scheduling_factories import (
    GIB,
    endpoint_object,
    holding,
    make_inventory,
    make_node,
    request,
)


def _where(decision: Decision) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {p.request.name: (p.node, p.gpu_indices) for p in decision.placements}


def _scheduler(*nodes: Node, policy: Policy = "binpack") -> Scheduler:
    return Scheduler(make_inventory(*nodes), policy=policy)


class TestBinpackAndSpread:
    def test_binpack_takes_the_tightest_gpu_that_fits(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB, 24 * GIB]), make_node("b", [40 * GIB]))
        scheduler.allocations.put(holding("x", "a", [0], 60 * GIB))  # a/0 has 20 GiB free
        decision = scheduler.schedule([request("r", 16 * GIB)], now=0.0)
        assert _where(decision) == {"r": ("a", (0,))}
        decision = scheduler.schedule([request("r", 22 * GIB)], now=0.0)
        assert _where(decision) == {"r": ("a", (1,))}
        decision = scheduler.schedule([request("r", 30 * GIB)], now=0.0)
        assert _where(decision) == {"r": ("b", (0,))}

    def test_spread_takes_the_emptiest_gpu(self) -> None:
        scheduler = _scheduler(
            make_node("a", [80 * GIB, 24 * GIB]), make_node("b", [40 * GIB]), policy="spread"
        )
        scheduler.allocations.put(holding("x", "a", [0], 60 * GIB))
        decision = scheduler.schedule([request("r", 16 * GIB)], now=0.0)
        assert _where(decision) == {"r": ("b", (0,))}

    def test_ties_go_to_the_first_node_by_name_then_the_lowest_index(self) -> None:
        policies: tuple[Policy, ...] = ("binpack", "spread")
        for policy in policies:
            scheduler = _scheduler(make_node("b"), make_node("a"), policy=policy)
            decision = scheduler.schedule([request("r", GIB)], now=0.0)
            assert _where(decision) == {"r": ("a", (0,))}

    def test_binpack_fills_one_gpu_before_the_next(self) -> None:
        scheduler = _scheduler(make_node("a", [10 * GIB] * 2))
        decision = scheduler.schedule([request(f"r{i}", 3 * GIB, at=i) for i in range(4)], now=0.0)
        assert [p.gpu_indices for p in decision.placements] == [(0,), (0,), (0,), (1,)]

    def test_spread_alternates(self) -> None:
        scheduler = _scheduler(make_node("a", [10 * GIB] * 2), policy="spread")
        decision = scheduler.schedule([request(f"r{i}", 3 * GIB, at=i) for i in range(4)], now=0.0)
        assert [p.gpu_indices for p in decision.placements] == [(0,), (1,), (0,), (1,)]

    def test_an_unknown_policy(self) -> None:
        with pytest.raises(ValueError, match="unknown policy"):
            Scheduler(make_inventory(), policy="random")  # type: ignore[arg-type]


class TestSharingAndHolds:
    def test_jobs_share_a_gpu_while_their_vram_fits(self) -> None:
        scheduler = _scheduler(make_node("a", [24 * GIB]))
        requests = [request(f"r{i}", 8 * GIB, at=i) for i in range(4)]
        decision = scheduler.schedule(requests, now=0.0)
        assert [p.request.name for p in decision.placements] == ["r0", "r1", "r2"]
        assert [r.name for r in decision.waiting] == ["r3"]

    def test_endpoints_hold_vram_like_jobs(self) -> None:
        scheduler = _scheduler(make_node("a", [24 * GIB]))
        scheduler.allocations.put(holding("llm", "a", [0], 20 * GIB, kind="endpoint"))
        decision = scheduler.schedule([request("r", 8 * GIB)], now=0.0)
        assert decision.placements == () and decision.waiting[0].name == "r"
        decision = scheduler.schedule([request("e", 4 * GIB, kind="endpoint")], now=0.0)
        assert _where(decision) == {"e": ("a", (0,))}

    def test_a_pass_leaves_nothing_held(self) -> None:
        scheduler = _scheduler(make_node("a", [24 * GIB] * 2))
        scheduler.schedule([request("r", 8 * GIB, 2), request("s", 30 * GIB, at=1)], now=1e9)
        assert [scheduler.free_mb("a", i) for i in (0, 1)] == [24 * GIB, 24 * GIB]
        assert len(scheduler.allocations) == 0

    def test_placements_in_a_pass_count_for_the_next_request(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB] * 2))
        decision = scheduler.schedule([request("r", 50 * GIB), request("s", 50 * GIB, at=1)], now=0)
        assert _where(decision) == {"r": ("a", (0,)), "s": ("a", (1,))}

    def test_a_request_that_already_holds_is_not_placed_again(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB] * 2))
        scheduler.allocations.put(holding("r", "a", [0], GIB, provisional=True))
        decision = scheduler.schedule([request("r", GIB)], now=0.0)
        assert decision == Decision((), (), (), {})

    def test_two_requests_with_one_key_are_refused(self) -> None:
        scheduler = _scheduler(make_node("a"))
        with pytest.raises(ValueError, match="same kind and name"):
            scheduler.schedule([request("r", GIB), request("r", 2 * GIB)], now=0.0)


class TestMultiGpu:
    def test_all_gpus_on_one_node(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB] * 4), make_node("b", [80 * GIB] * 4))
        scheduler.allocations.put(holding("x", "a", [0], 60 * GIB))
        decision = scheduler.schedule([request("r", 40 * GIB, 4)], now=0.0)
        assert _where(decision) == {"r": ("b", (0, 1, 2, 3))}

    def test_binpack_picks_the_tightest_node_and_gpus(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB] * 4), make_node("b", [80 * GIB] * 4))
        scheduler.allocations.put(holding("x", "b", [1, 3], 50 * GIB))
        decision = scheduler.schedule([request("r", 20 * GIB, 2)], now=0.0)
        assert _where(decision) == {"r": ("b", (1, 3))}

    def test_spread_picks_the_emptiest(self) -> None:
        scheduler = _scheduler(
            make_node("a", [80 * GIB] * 4), make_node("b", [80 * GIB] * 4), policy="spread"
        )
        scheduler.allocations.put(holding("x", "a", [0, 1, 2], 10 * GIB))
        decision = scheduler.schedule([request("r", 20 * GIB, 2)], now=0.0)
        assert _where(decision) == {"r": ("b", (0, 1))}

    def test_none_when_no_single_node_has_them_all(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB] * 4), make_node("b", [80 * GIB] * 4))
        scheduler.allocations.put(holding("x", "a", [0], 60 * GIB))
        scheduler.allocations.put(holding("y", "b", [3], 60 * GIB))
        decision = scheduler.schedule([request("r", 40 * GIB, 4)], now=0.0)
        assert decision.placements == () and decision.impossible == ()
        assert [r.name for r in decision.waiting] == ["r"]
        assert scheduler.free_mb("a", 1) == 80 * GIB  # no partial hold

    def test_never_mixes_vendors(self) -> None:
        mixed = make_inventory(
            make_node("a", [80 * GIB] * 2).model_copy(
                update={
                    "gpus": make_node("a", [80 * GIB] * 2).gpus
                    + tuple(
                        g.model_copy(update={"index": g.index + 2})
                        for g in make_node("a", [80 * GIB] * 2, vendor="amd").gpus
                    )
                }
            )
        )
        scheduler = Scheduler(mixed)
        decision = scheduler.schedule([request("r", GIB, 3)], now=0.0)
        assert decision.placements == () and decision.impossible[0].most_gpus == 2
        decision = scheduler.schedule([request("r", GIB, 2, "amd")], now=0.0)
        assert _where(decision) == {"r": ("a", (2, 3))}


class TestVendors:
    def test_the_vendor_is_respected(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB]), make_node("b", [24 * GIB], vendor="amd"))
        decision = scheduler.schedule([request("r", 8 * GIB, vendor="nvidia")], now=0.0)
        assert _where(decision) == {"r": ("a", (0,))}
        decision = scheduler.schedule([request("r", 8 * GIB, vendor="amd")], now=0.0)
        assert _where(decision) == {"r": ("b", (0,))}

    def test_any_goes_to_the_pool_with_more_room_beyond_what_waits_for_it(self) -> None:
        scheduler = _scheduler(
            make_node("a", [24 * GIB] * 2), make_node("b", [48 * GIB] * 2, vendor="amd")
        )
        decision = scheduler.schedule([request("r", 8 * GIB)], now=0.0)
        assert _where(decision) == {"r": ("b", (0,))}  # amd has more free VRAM
        amd_work = [request(f"amd{i}", 40 * GIB, vendor="amd", at=1 + i) for i in range(2)]
        decision = scheduler.schedule([request("r", 8 * GIB), *amd_work], now=0.0)
        assert _where(decision)["r"] == ("a", (0,))  # ... unless amd work waits for it
        assert {p.request.name for p in decision.placements} == {"r", "amd0", "amd1"}

    def test_any_falls_back_to_the_other_vendor(self) -> None:
        scheduler = _scheduler(make_node("a", [24 * GIB]), make_node("b", [8 * GIB], vendor="amd"))
        decision = scheduler.schedule([request("r", 16 * GIB)], now=0.0)
        assert _where(decision) == {"r": ("a", (0,))}


class TestUnavailableGpus:
    def test_not_ready_nodes_and_cordoned_gpus_are_skipped(self) -> None:
        scheduler = _scheduler(
            make_node("a", [80 * GIB] * 2, ready=False),
            make_node("b", [80 * GIB] * 2, cordoned=[0]),
        )
        decision = scheduler.schedule([request("r", GIB), request("s", GIB, 2, at=1)], now=0.0)
        assert _where(decision) == {"r": ("b", (1,))}
        assert [r.name for r in decision.waiting] == ["s"]  # possible, once a/b come back
        assert scheduler.free_mb("a", 0) is None and scheduler.free_mb("b", 0) is None

    def test_a_new_inventory_keeps_the_allocations(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB], ready=False))
        scheduler.allocations.put(holding("x", "a", [0], 70 * GIB))
        scheduler.set_inventory(make_inventory(make_node("a", [80 * GIB])))
        decision = scheduler.schedule([request("r", 20 * GIB)], now=0.0)
        assert decision.placements == () and scheduler.free_mb("a", 0) == 10 * GIB

    def test_allocations_on_unknown_gpus_are_ignored(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB]))
        scheduler.allocations.put(holding("x", "gone", [0], 70 * GIB))
        assert scheduler.free_mb("a", 0) == 80 * GIB


class TestImpossible:
    def test_too_much_vram_names_the_largest_gpu(self) -> None:
        scheduler = _scheduler(
            make_node("a", [24 * GIB], model="NVIDIA L4"),
            make_node("b", [80 * GIB, 40 * GIB], model="NVIDIA H100"),
            make_node("c", [192 * GIB], vendor="amd", model="AMD Instinct MI300X"),
        )
        (why,) = scheduler.schedule([request("r", 100 * GIB, vendor="nvidia")], now=0).impossible
        assert why.largest_gpu is not None and (why.largest_gpu.node, why.largest_gpu.index) == (
            "b",
            0,
        )
        assert why.message == (
            "1 x 102400 MiB (nvidia) on one node is impossible: the largest GPU is NVIDIA H100 "
            "with 81920 MiB (b/0)"
        )
        assert scheduler.check(request("r", 100 * GIB)) is None  # any: the MI300X holds it

    def test_too_many_gpus(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB] * 4), make_node("b", [80 * GIB] * 2))
        why = scheduler.check(request("r", 40 * GIB, 8))
        assert why is not None and why.most_gpus == 4
        assert "at most 4 GPU(s) with 40960 MiB sit on one node" in why.message

    def test_a_vendor_with_no_gpu(self) -> None:
        why = _scheduler(make_node("a")).check(request("r", GIB, vendor="amd"))
        assert why is not None and why.largest_gpu is None
        assert "the inventory has no GPU of amd" in why.message

    def test_not_ready_and_cordoned_gpus_still_count_as_possible(self) -> None:
        scheduler = _scheduler(
            make_node("a", [80 * GIB], ready=False), make_node("b", cordoned=[0])
        )
        assert scheduler.check(request("r", 80 * GIB)) is None

    def test_the_pass_reports_and_skips_them(self) -> None:
        scheduler = _scheduler(make_node("a", [24 * GIB]))
        decision = scheduler.schedule([request("big", 25 * GIB), request("ok", GIB, at=1)], now=0)
        assert [i.request.name for i in decision.impossible] == ["big"]
        assert _where(decision) == {"ok": ("a", (0,))}

    def test_a_bad_request_is_refused(self) -> None:
        with pytest.raises(ValueError, match="vram_mb"):
            PlacementRequest("r", 0)
        with pytest.raises(ValueError, match="gpu_count"):
            PlacementRequest("r", 1, gpu_count=0)
        with pytest.raises(ValueError, match="vendor"):
            PlacementRequest("r", 1, vendor="intel")  # type: ignore[arg-type]


class TestFragmentation:
    def test_the_definition_on_a_small_cluster(self) -> None:
        scheduler = _scheduler(make_node("a", [80 * GIB] * 2), make_node("b", [24 * GIB]))
        scheduler.allocations.put(holding("x", "a", [0], 70 * GIB))  # a: 10 + 80 free; b: 24
        fragmentation = scheduler.fragmentation(
            [request("small", 8 * GIB), request("mid", 20 * GIB), request("pair", 8 * GIB, 2)]
        )
        # small uses everything; mid cannot use a/0 (10); pair only a (two GPUs >= 8): b's 24
        assert fragmentation.free_mb == 114 * GIB
        assert fragmentation.unusable_mb == pytest.approx((0 + 10 * GIB + 24 * GIB) / 3)
        assert fragmentation.fraction == pytest.approx(34 / 3 / 114)
        assert fragmentation.requests == 3

    def test_vendor_and_readiness(self) -> None:
        scheduler = _scheduler(
            make_node("a", [10 * GIB]),
            make_node("b", [30 * GIB], vendor="amd"),
            make_node("c", ready=False),
        )
        fragmentation = scheduler.fragmentation([request("r", GIB, vendor="amd")])
        assert (fragmentation.free_mb, fragmentation.unusable_mb) == (40 * GIB, 10 * GIB)

    def test_nothing_waiting_and_impossible_requests(self) -> None:
        scheduler = _scheduler(make_node("a", [10 * GIB]))
        assert scheduler.fragmentation([]).unusable_mb == 0
        assert scheduler.fragmentation([request("r", 11 * GIB)]).requests == 0


class TestOneShot:
    def test_schedule_function_equals_the_scheduler(self) -> None:
        inventory = make_inventory(make_node("a"), make_node("b", vendor="amd"))
        allocations = AllocationMap()
        allocations.put(holding("x", "a", [0, 1], 30 * GIB))
        requests = [request(f"r{i}", (i + 1) * 7 * GIB, 1 + i % 3, at=i) for i in range(12)]
        expected = Scheduler(inventory, allocations).schedule(requests, now=5.0)
        assert schedule(inventory, allocations, requests, now=5.0) == expected

    def test_allocation_rate(self) -> None:
        scheduler = _scheduler(
            make_node("a", [10 * GIB] * 2), make_node("b", [10 * GIB], ready=False)
        )
        assert scheduler.allocation_rate() == 0
        scheduler.allocations.put(holding("x", "a", [0], 5 * GIB))
        assert scheduler.allocation_rate() == 0.25


class TestRealGpus:
    """A request that needs a real GPU (a vllm endpoint) beside simulated GPUs."""

    @staticmethod
    def _mixed(policy: Policy = "binpack") -> Scheduler:
        # the gateway's simulated GPU (emptiest and largest) beside a joined node's real one
        return _scheduler(
            make_node("gateway", [80 * GIB], simulated=True),
            make_node("joined", [24 * GIB]),
            policy=policy,
        )

    def test_a_vllm_endpoint_goes_on_the_real_gpu_even_when_the_simulated_is_emptier(
        self,
    ) -> None:
        endpoint = PlacementRequest.from_endpoint(endpoint_object("e", vram_mb=8 * GIB))
        assert endpoint.real_gpu
        policies: tuple[Policy, ...] = ("binpack", "spread")
        for policy in policies:
            scheduler = self._mixed(policy)
            decision = scheduler.schedule([endpoint], now=0.0)
            assert _where(decision) == {"e": ("joined", (0,))}
            # binpack: the real GPU is not the tightest when it holds little
            scheduler.allocations.put(holding("x", "gateway", [0], 70 * GIB))
            decision = scheduler.schedule([endpoint], now=0.0)
            assert _where(decision) == {"e": ("joined", (0,))}

    def test_other_modes_and_jobs_still_use_simulated_gpus(self) -> None:
        scheduler = self._mixed()
        custom = PlacementRequest.from_endpoint(
            endpoint_object("c", vram_mb=8 * GIB, mode="custom")
        )
        decision = scheduler.schedule([custom, request("j", 30 * GIB)], now=0.0)
        assert _where(decision) == {"c": ("joined", (0,)), "j": ("gateway", (0,))}
        decision = schedule(
            make_inventory(make_node("gateway", [20 * GIB], simulated=True), make_node("b")),
            AllocationMap(),
            [request("j", 10 * GIB)],
            now=0.0,
        )
        assert _where(decision) == {"j": ("gateway", (0,))}  # the tightest, simulated

    def test_a_full_real_gpu_makes_it_wait_and_says_why(self) -> None:
        scheduler = self._mixed()
        scheduler.allocations.put(holding("x", "joined", [0], 20 * GIB))
        endpoint = PlacementRequest.from_endpoint(endpoint_object("e", vram_mb=8 * GIB))
        decision = scheduler.schedule([endpoint, request("j", 8 * GIB)], now=0.0)
        assert _where(decision) == {"j": ("gateway", (0,))}
        assert decision.waiting == (endpoint,)
        why = decision.unplaced[endpoint.key]
        assert why.reason == REAL_GPU_BUSY
        assert "only simulated GPUs have room" in why.message
        # no room anywhere: still why, and the simulated GPUs no longer named as free
        scheduler.allocations.put(holding("y", "gateway", [0], 79 * GIB))
        decision = scheduler.schedule([endpoint], now=0.0)
        assert decision.waiting == (endpoint,)
        why = decision.unplaced[endpoint.key]
        assert why.reason == REAL_GPU_BUSY
        assert "no GPU, real or simulated, has room now" in why.message

    def test_it_reserves_only_real_gpus_once_aged(self) -> None:
        scheduler = self._mixed()
        scheduler.allocations.put(holding("x", "joined", [0], 20 * GIB))
        endpoint = request("e", 8 * GIB, kind="endpoint", real_gpu=True)
        decision = scheduler.schedule([endpoint], now=10_000.0)
        assert decision.reservations[endpoint.key].node == "joined"
        kept = scheduler.schedule([endpoint], now=10_001.0, reservations=decision.reservations)
        assert kept.reservations == decision.reservations

    def test_a_multi_gpu_request_never_takes_a_simulated_gpu_of_its_node(self) -> None:
        mixed_node = Node(
            name="a",
            gpus=(
                make_node("a", [24 * GIB]).gpus[0],
                make_node("a", [80 * GIB], simulated=True).gpus[0].model_copy(update={"index": 1}),
                make_node("a", [24 * GIB]).gpus[0].model_copy(update={"index": 2}),
            ),
        )
        scheduler = _scheduler(mixed_node)
        decision = scheduler.schedule([request("e", 8 * GIB, 2, real_gpu=True)], now=0.0)
        assert _where(decision) == {"e": ("a", (0, 2))}
        decision = scheduler.schedule([request("e", 8 * GIB, 3, real_gpu=True)], now=0.0)
        assert decision.impossible and "real GPUs only" in decision.impossible[0].message
        decision = scheduler.schedule([request("j", 30 * GIB, 1)], now=0.0)
        assert _where(decision) == {"j": ("a", (1,))}  # a job takes the simulated one

    def test_too_large_for_every_real_gpu_is_impossible_naming_the_largest_real_one(
        self,
    ) -> None:
        scheduler = self._mixed()
        why = scheduler.check(request("e", 40 * GIB, kind="endpoint", real_gpu=True))
        assert why is not None and why.largest_gpu is not None
        assert why.largest_gpu.node == "joined"
        assert "largest real GPU" in why.message
        assert scheduler.check(request("j", 40 * GIB)) is None  # a job fits the simulated one

    def test_without_any_real_gpu_it_goes_on_a_simulated_one(self) -> None:
        scheduler = _scheduler(make_node("gateway", [24 * GIB], simulated=True))
        decision = scheduler.schedule([request("e", 8 * GIB, real_gpu=True)], now=0.0)
        assert _where(decision) == {"e": ("gateway", (0,))}

    def test_fragmentation_counts_simulated_vram_as_unusable_for_it(self) -> None:
        scheduler = self._mixed()
        fragmentation = scheduler.fragmentation([request("e", GIB, real_gpu=True)])
        assert (fragmentation.free_mb, fragmentation.unusable_mb) == (104 * GIB, 80 * GIB)
