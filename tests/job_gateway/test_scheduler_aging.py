"""Queue order: priority, FIFO, backfill, and aging reservations with their bound."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest

from job_gateway.inventory import Inventory
from job_gateway.scheduler import (
    AllocationKey,
    Decision,
    PlacementRequest,
    Reservation,
    Scheduler,
    rank_key,
)
from tests.job_gateway.scheduling_factories import (
    GIB,
    holding,
    make_inventory,
    make_node,
    request,
)


def _names(decision: Decision) -> list[str]:
    return [p.request.name for p in decision.placements]


class TestOrder:
    def test_priority_first_then_submission_time(self) -> None:
        scheduler = Scheduler(make_inventory(make_node("a", [10 * GIB])))
        requests = [
            request("late-low", 6 * GIB, at=3),
            request("early-low", 6 * GIB, at=1),
            request("high", 6 * GIB, priority=5, at=9),
        ]
        assert sorted(requests, key=rank_key)[0].name == "high"
        decision = scheduler.schedule(requests, now=10)
        assert _names(decision) == ["high"]
        assert [r.name for r in decision.waiting] == ["early-low", "late-low"]

    def test_backfill_places_a_small_request_behind_a_large_one_that_does_not_fit(self) -> None:
        scheduler = Scheduler(make_inventory(make_node("a", [80 * GIB] * 2)))
        scheduler.allocations.put(holding("x", "a", [0], 50 * GIB))
        scheduler.allocations.put(holding("y", "a", [1], 10 * GIB))
        big, small = request("big", 80 * GIB, at=0), request("small", 40 * GIB, at=1)
        decision = scheduler.schedule([big, small], now=10)
        assert _names(decision) == ["small"] and decision.reservations == {}


class TestAgingReservations:
    @pytest.fixture
    def scheduler(self) -> Scheduler:
        """a/0 holds 50 GiB, a/1 10 GiB: an 80 GiB request waits, a/1 is 10 GiB short."""
        scheduler = Scheduler(make_inventory(make_node("a", [80 * GIB] * 2)), aging_s=100)
        scheduler.allocations.put(holding("x", "a", [0], 50 * GIB))
        scheduler.allocations.put(holding("y", "a", [1], 10 * GIB))
        return scheduler

    def test_an_aged_request_reserves_the_gpus_closest_to_fitting(
        self, scheduler: Scheduler
    ) -> None:
        big, small = request("big", 80 * GIB, at=0), request("small", 40 * GIB, at=1)
        decision = scheduler.schedule([big, small], now=100)
        assert decision.reservations == {big.key: Reservation(big.key, "a", (1,))}
        assert _names(decision) == []  # 40 GiB would only fit on the reserved a/1

    def test_lower_ranked_work_may_use_what_the_reservation_leaves(
        self, scheduler: Scheduler
    ) -> None:
        scheduler.allocations.remove(("job", "y"))
        scheduler.allocations.put(holding("y", "a", [1], 70 * GIB))  # a/1: 10 free, a/0: 30
        big = request("big", 40 * GIB, 2, at=0)  # needs both; a/0 is closest (10 short)
        filler = request("filler", 20 * GIB, at=1)
        decision = scheduler.schedule([big, filler], now=100)
        assert decision.reservations[big.key].gpu_indices == (0, 1)
        assert decision.placements == ()  # 20 on a/0 would leave less than 40
        decision = scheduler.schedule([request("big", 10 * GIB, at=0), filler], now=100)
        assert _names(decision) == ["big", "filler"]

    def test_the_reservation_is_kept_while_valid(self, scheduler: Scheduler) -> None:
        big = request("big", 80 * GIB, at=0)
        first = scheduler.schedule([big], now=100)
        # a/1 now has less free than a/0: a fresh choice would move, a kept one stays.
        scheduler.allocations.put(holding("y", "a", [1], 45 * GIB))
        scheduler.allocations.put(holding("x", "a", [0], 30 * GIB))
        kept = scheduler.schedule([big], now=101, reservations=first.reservations)
        fresh = scheduler.schedule([big], now=101)
        assert kept.reservations[big.key].gpu_indices == (1,)
        assert fresh.reservations[big.key].gpu_indices == (0,)

    def test_a_reservation_on_a_lost_node_is_chosen_again(self, scheduler: Scheduler) -> None:
        big = request("big", 80 * GIB, at=0)
        stale = {big.key: Reservation(big.key, "gone", (0,))}
        decision = scheduler.schedule([big], now=100, reservations=stale)
        assert decision.reservations[big.key] == Reservation(big.key, "a", (1,))

    def test_endpoints_are_not_waited_for(self, scheduler: Scheduler) -> None:
        scheduler.allocations.put(holding("y", "a", [1], 10 * GIB, kind="endpoint"))
        decision = scheduler.schedule([request("big", 80 * GIB, at=0)], now=100)
        (reservation,) = decision.reservations.values()
        assert reservation.gpu_indices == (0,)  # further from fitting, but jobs end

    def test_not_aged_yet_and_the_limit(self, scheduler: Scheduler) -> None:
        assert scheduler.schedule([request("big", 80 * GIB, at=1)], now=100).reservations == {}
        limited = Scheduler(scheduler.inventory, scheduler.allocations, max_reservations=1)
        bigs = [request(f"big{i}", 80 * GIB, at=i) for i in range(3)]
        assert list(limited.schedule(bigs, now=1000).reservations) == [("job", "big0")]

    def test_a_placed_request_needs_no_reservation(self, scheduler: Scheduler) -> None:
        big = request("big", 80 * GIB, at=0)
        first = scheduler.schedule([big], now=100)
        scheduler.allocations.remove(("job", "y"))
        decision = scheduler.schedule([big], now=101, reservations=first.reservations)
        assert _names(decision) == ["big"] and decision.reservations == {}


@dataclass
class Tracked:
    request: PlacementRequest
    head_at: float | None = None
    placed_at: float | None = None


TICKS = 400


def _simulate(
    aging_s: float, seed: int, *, arrivals: tuple[int, int], longest: int
) -> list[Tracked]:
    """A busy cluster, one pass a tick: small jobs stream in; now and then a whole-node job."""
    rng = random.Random(seed)
    inventory: Inventory = make_inventory(*(make_node(f"n{i}", [80 * GIB] * 4) for i in range(4)))
    scheduler = Scheduler(inventory, aging_s=aging_s)
    ends: dict[AllocationKey, int] = {}
    waiting: dict[AllocationKey, Tracked] = {}
    done: list[Tracked] = []
    reservations: dict[AllocationKey, Reservation] = {}
    serial = 0
    for tick in range(TICKS):
        for key in [k for k, end in ends.items() if end <= tick]:
            del ends[key]
            scheduler.allocations.remove(key)
        for _ in range(rng.randint(*arrivals)):
            serial += 1
            big = rng.random() < 0.03
            r = request(
                f"r{serial:05d}",
                70 * GIB if big else rng.choice([10, 20, 30, 40]) * GIB,
                4 if big else 1,
                at=tick + rng.random() * 0.5,
            )
            waiting[r.key] = Tracked(r)
        decision = scheduler.schedule(
            [t.request for t in waiting.values()], now=tick + 0.9, reservations=reservations
        )
        reservations = dict(decision.reservations)
        for placement in decision.placements:
            scheduler.allocations.put(placement.allocation(provisional=False))
            ends[placement.key] = tick + rng.randint(1, longest)
            tracked = waiting.pop(placement.key)
            tracked.placed_at = tick
            done.append(tracked)
        if decision.waiting:
            head = waiting[decision.waiting[0].key]
            if head.head_at is None:
                head.head_at = tick
    return done + list(waiting.values())


class TestAgingBound:
    """Jobs end within L ticks and a pass runs every tick: the head, once aged, is placed
    within L + 2 ticks of max(becoming the head, submitted + aging_s)."""

    LONGEST = 12
    BUSY = (2, 6)  # arrivals per tick: about 75% of the VRAM asked for
    OVERLOADED = (6, 10)  # more than the cluster holds: the queue only grows

    @pytest.mark.parametrize("arrivals", [BUSY, OVERLOADED])
    @pytest.mark.parametrize("seed", range(4))
    def test_no_request_waits_beyond_the_bound(self, seed: int, arrivals: tuple[int, int]) -> None:
        aging_s = 30.0
        tracked = _simulate(aging_s, seed, arrivals=arrivals, longest=self.LONGEST)
        placed = 0
        for t in tracked:
            head_at = math.inf if t.head_at is None else t.head_at
            deadline = max(head_at, t.request.submitted_at + aging_s) + self.LONGEST + 2
            if t.placed_at is None:
                assert deadline > TICKS - 1, t  # still inside its bound when the run ends
            else:
                placed += 1
                assert t.placed_at <= deadline, t
        assert placed > len(tracked) // 2

    def test_without_aging_a_large_request_starves(self) -> None:
        """The same overload with aging off: backfill alone keeps whole-node jobs out."""
        tracked = _simulate(math.inf, 0, arrivals=self.OVERLOADED, longest=self.LONGEST)
        big = [t for t in tracked if t.request.gpu_count == 4]
        waits = [(t.placed_at or TICKS) - t.request.submitted_at for t in big]
        assert max(waits) > 300  # versus at most 30 + 12 + 2 once at the head, with aging
