"""The allocation map: derived from Job and Endpoint objects one event at a time."""

from __future__ import annotations

import pytest

from job_gateway.scheduler import AllocationMap, PlacementRequest, Scheduler
from tests.job_gateway.scheduling_factories import (
    GIB,
    endpoint_object,
    holding,
    job_object,
    make_inventory,
    make_node,
)


class Changes:
    """A listener that records what it is told."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[int, ...]]] = []

    def __call__(self, node: str, indices: tuple[int, ...]) -> None:
        self.seen.append((node, indices))


class TestJobs:
    @pytest.mark.parametrize(
        ("phase", "holds"),
        [
            ("Pending", False),
            ("Allocated", True),
            ("Running", True),
            ("Completed", False),
            ("Failed", False),
            ("Cancelled", False),
            ("TimedOut", False),
        ],
    )
    def test_a_job_holds_while_allocated_or_running(self, phase: str, holds: bool) -> None:
        allocations = AllocationMap()
        allocations.apply_job(
            job_object("j", phase=phase, node="n", gpu_indices=[0, 2], vram_mb=GIB)
        )
        assert (("job", "j") in allocations) is holds
        assert allocations.held_mb("n", 0) == allocations.held_mb("n", 2) == (GIB if holds else 0)
        assert allocations.held_mb("n", 1) == 0

    def test_a_holding_phase_without_a_placement_holds_nothing(self) -> None:
        allocations = AllocationMap()
        assert not allocations.apply_job(job_object("j", phase="Allocated"))
        assert len(allocations) == 0

    def test_the_life_of_a_job(self) -> None:
        allocations = AllocationMap()
        changes = Changes()
        allocations.subscribe(changes)
        steps = [
            (job_object("j", vram_mb=GIB), False),
            (job_object("j", phase="Allocated", node="n", gpu_indices=[1], vram_mb=GIB), True),
            (job_object("j", phase="Running", node="n", gpu_indices=[1], vram_mb=GIB), False),
            (job_object("j", phase="Pending", vram_mb=GIB), True),  # requeued
            (job_object("j", phase="Allocated", node="m", gpu_indices=[3], vram_mb=GIB), True),
            (job_object("j", phase="Completed", node="m", gpu_indices=[3], vram_mb=GIB), True),
        ]
        assert [allocations.apply_job(job) for job, _ in steps] == [changed for _, changed in steps]
        assert changes.seen == [("n", (1,)), ("n", (1,)), ("m", (3,)), ("m", (3,))]
        assert len(allocations) == 0 and allocations.held_mb("m", 3) == 0

    def test_sharing_a_gpu_adds_up(self) -> None:
        allocations = AllocationMap.from_objects(
            jobs=[
                job_object(f"j{i}", phase="Running", node="n", gpu_indices=[0], vram_mb=GIB * i)
                for i in (1, 2, 3)
            ]
        )
        assert allocations.held_mb("n", 0) == 6 * GIB
        allocations.remove(("job", "j2"))
        assert allocations.held_mb("n", 0) == 4 * GIB

    def test_moving_to_other_gpus_tells_both_sets(self) -> None:
        allocations = AllocationMap()
        changes = Changes()
        allocations.put(holding("j", "n", [0, 1], GIB))
        allocations.subscribe(changes)
        allocations.put(holding("j", "n", [1, 2], GIB))
        allocations.put(holding("j", "m", [0], GIB))
        assert changes.seen == [("n", (0, 1, 2)), ("n", (1, 2)), ("m", (0,))]
        assert [allocations.held_mb("n", i) for i in range(3)] == [0, 0, 0]


class TestEndpoints:
    @pytest.mark.parametrize(
        ("phase", "holds"),
        [
            ("Pending", False),
            ("Deploying", True),
            ("Running", True),
            ("Stopped", False),
            ("Failed", False),
        ],
    )
    def test_an_endpoint_holds_while_deploying_or_running(self, phase: str, holds: bool) -> None:
        allocations = AllocationMap.from_objects(
            endpoints=[endpoint_object("e", phase=phase, node="n", gpu_indices=[0], vram_mb=GIB)]
        )
        assert (allocations.held_mb("n", 0), allocations.endpoint_held_mb("n", 0)) == (
            (GIB, GIB) if holds else (0, 0)
        )

    def test_an_endpoint_holds_its_vram_once_per_replica_serve_may_start(self) -> None:
        endpoint = endpoint_object(
            "e", phase="Running", node="n", gpu_indices=[0, 1], vram_mb=GIB, max_replicas=3
        )
        allocations = AllocationMap.from_objects(endpoints=[endpoint])
        assert [allocations.held_mb("n", i) for i in (0, 1)] == [3 * GIB, 3 * GIB]
        assert PlacementRequest.from_endpoint(endpoint).vram_mb == 3 * GIB

    def test_a_job_and_an_endpoint_of_one_name_are_two_objects(self) -> None:
        allocations = AllocationMap()
        allocations.apply_job(
            job_object("x", phase="Running", node="n", gpu_indices=[0], vram_mb=GIB)
        )
        allocations.apply_endpoint(
            endpoint_object("x", phase="Running", node="n", gpu_indices=[0], vram_mb=2 * GIB)
        )
        assert allocations.held_mb("n", 0) == 3 * GIB
        assert allocations.endpoint_held_mb("n", 0) == 2 * GIB


class TestProvisionalHolds:
    def test_it_survives_the_stale_pending_event_and_yields_to_the_real_one(self) -> None:
        allocations = AllocationMap()
        scheduler = Scheduler(make_inventory(make_node("n", [10 * GIB])), allocations)
        decision = scheduler.schedule([PlacementRequest("j", 4 * GIB)], now=0.0)
        (placement,) = decision.placements
        allocations.put(placement.allocation())
        assert not allocations.apply_job(job_object("j", vram_mb=4 * GIB))  # not seen yet
        assert scheduler.free_mb("n", 0) == 6 * GIB
        real = job_object("j", phase="Allocated", node="n", gpu_indices=[0], vram_mb=4 * GIB)
        assert allocations.apply_job(real)
        held = allocations.get(("job", "j"))
        assert held is not None and not held.provisional
        assert allocations.apply_job(job_object("j", vram_mb=4 * GIB))  # a real requeue frees it
        assert scheduler.free_mb("n", 0) == 10 * GIB

    def test_a_failed_write_is_undone_and_a_terminal_phase_frees_it(self) -> None:
        allocations = AllocationMap()
        allocations.put(holding("a", "n", [0], GIB, provisional=True))
        assert allocations.remove(("job", "a"))
        allocations.put(holding("b", "n", [0], GIB, provisional=True))
        assert allocations.apply_job(job_object("b", phase="Cancelled"))
        assert allocations.held_mb("n", 0) == 0


class TestIncremental:
    def test_a_change_touches_only_that_objects_gpus(self) -> None:
        allocations = AllocationMap()
        changes = Changes()
        allocations.subscribe(changes)
        for i in range(50):
            allocations.put(holding(f"j{i}", f"n{i % 5}", [i % 8], GIB))
        changes.seen.clear()
        allocations.put(holding("j7", "n2", [7, 6], GIB))
        allocations.remove(("job", "j3"))
        assert changes.seen == [("n2", (6, 7)), ("n3", (3,))]

    def test_unsubscribe(self) -> None:
        allocations = AllocationMap()
        changes = Changes()
        unsubscribe = allocations.subscribe(changes)
        unsubscribe()
        allocations.put(holding("j", "n", [0], GIB))
        assert changes.seen == []

    def test_repeated_indices_are_refused(self) -> None:
        with pytest.raises(ValueError, match="repeat"):
            holding("j", "n", [1, 1], GIB)
