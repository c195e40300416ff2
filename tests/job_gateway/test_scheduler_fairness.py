"""Fair share: weighted dominant-resource order when the cluster is full, and no starvation."""

from __future__ import annotations

import math
import random

import pytest

from job_gateway.inventory import Inventory
from job_gateway.scheduler import AllocationKey, PlacementRequest, Reservation, Scheduler, rank_key
from job_gateway.scheduler.fairness import FairOrder
from tests.job_gateway.scheduling_factories import (
    GIB,
    holding,
    make_inventory,
    make_node,
    request,
)

TOTALS = (8 * 80 * GIB, 64_000, 512 * GIB)


def _order(
    requests: list[PlacementRequest],
    held: dict[str, tuple[int, int, int]],
    weights: dict[str, float] | None = None,
    placed: set[str] = frozenset(),  # type: ignore[assignment]
) -> list[str]:
    fair = FairOrder(
        requests,
        totals=TOTALS,
        held=lambda user: held.get(user, (0, 0, 0)),
        weights=weights or {},
        rank_key=rank_key,
    )
    names = []
    for r in fair:
        names.append(r.name)
        if r.name in placed:
            fair.charge(r)
    return names


class TestFairOrder:
    def test_the_lowest_dominant_share_goes_first(self) -> None:
        requests = [request("a1", GIB, user="alice", at=0), request("b1", GIB, user="bob", at=5)]
        held = {"alice": (160 * GIB, 0, 0), "bob": (0, 32_000, 0)}  # 25% VRAM vs 50% CPU
        assert _order(requests, held) == ["a1", "b1"]
        held = {"alice": (400 * GIB, 0, 0), "bob": (0, 16_000, 0)}  # 62.5% vs 25%
        assert _order(requests, held) == ["b1", "a1"]

    def test_weights_divide_the_share(self) -> None:
        requests = [request("a1", GIB, user="alice", at=0), request("b1", GIB, user="bob", at=5)]
        held = {"alice": (320 * GIB, 0, 0), "bob": (160 * GIB, 0, 0)}  # 50% vs 25%
        assert _order(requests, held) == ["b1", "a1"]
        assert _order(requests, held, {"alice": 3}) == ["a1", "b1"]  # 16.7% vs 25%

    def test_ties_go_to_the_older_head_and_each_queue_is_oldest_first(self) -> None:
        requests = [
            request("b2", GIB, user="bob", at=4),
            request("a1", GIB, user="alice", at=1),
            request("b1", GIB, user="bob", at=0),
        ]
        assert _order(requests, {}) == ["b1", "a1", "b2"]

    def test_a_placement_raises_its_users_share_at_once(self) -> None:
        requests = [request(f"a{i}", 80 * GIB, user="alice", at=i) for i in range(3)]
        requests += [request(f"b{i}", 80 * GIB, user="bob", at=10 + i) for i in range(3)]
        everyone = {r.name for r in requests}
        assert _order(requests, {}, placed=everyone) == ["a0", "b0", "a1", "b1", "a2", "b2"]
        # a request that does not fit leaves its user's share as it was (backfill)
        assert _order(requests, {}, placed={"b0", "b1", "b2"}) == [
            "a0",
            "a1",
            "a2",
            "b0",
            "b1",
            "b2",
        ]


class TestSchedulerShares:
    def _full(self, **kwargs: object) -> Scheduler:
        """Room for one 80 GiB job: alice holds two GPUs, bob one."""
        scheduler = Scheduler(make_inventory(make_node("a", [80 * GIB] * 4)), **kwargs)  # type: ignore[arg-type]
        scheduler.allocations.put(holding("x", "a", [0], 80 * GIB, user="alice"))
        scheduler.allocations.put(holding("y", "a", [1], 80 * GIB, user="alice"))
        scheduler.allocations.put(holding("z", "a", [2], 80 * GIB, user="bob"))
        return scheduler

    def test_when_full_the_user_holding_less_is_placed(self) -> None:
        scheduler = self._full()
        older = request("alice-job", 80 * GIB, user="alice", at=0)
        newer = request("bob-job", 80 * GIB, user="bob", at=50)
        decision = scheduler.schedule([older, newer], now=60)
        assert [p.request.name for p in decision.placements] == ["bob-job"]
        assert decision.tried == (newer.key, older.key)

    def test_an_admin_weight_turns_it(self) -> None:
        scheduler = self._full(shares={"alice": 3})
        older = request("alice-job", 80 * GIB, user="alice", at=0)
        newer = request("bob-job", 80 * GIB, user="bob", at=50)
        decision = scheduler.schedule([older, newer], now=60)
        assert [p.request.name for p in decision.placements] == ["alice-job"]
        scheduler.set_shares({})
        decision = scheduler.schedule([older, newer], now=60)
        assert [p.request.name for p in decision.placements] == ["bob-job"]

    def test_priority_stays_strict(self) -> None:
        scheduler = self._full()
        urgent = request("alice-job", 80 * GIB, user="alice", priority=1, at=0)
        decision = scheduler.schedule([urgent, request("bob-job", 80 * GIB, user="bob")], now=1)
        assert [p.request.name for p in decision.placements] == ["alice-job"]

    @pytest.mark.parametrize("weight", [0, -1.0, math.nan])
    def test_a_weight_must_be_above_zero(self, weight: float) -> None:
        with pytest.raises(ValueError, match="above 0"):
            Scheduler(make_inventory(make_node("a")), shares={"alice": weight})


def _stream(aging_s: float, seed: int) -> tuple[float | None, float]:
    """Alice streams single-GPU jobs faster than the cluster runs them; bob asks one whole
    node at tick 20. Jobs end within 12 ticks; a pass a tick. When bob's job is placed."""
    rng = random.Random(seed)
    inventory: Inventory = make_inventory(*(make_node(f"n{i}", [80 * GIB] * 4) for i in range(4)))
    scheduler = Scheduler(inventory, aging_s=aging_s)
    ends: dict[AllocationKey, int] = {}
    waiting: dict[AllocationKey, PlacementRequest] = {}
    reservations: dict[AllocationKey, Reservation] = {}
    big = request("bob-big", 80 * GIB, 4, user="bob", at=20.5)
    for tick in range(300):
        for key in [k for k, end in ends.items() if end <= tick]:
            del ends[key]
            scheduler.allocations.remove(key)
        for n in range(rng.randint(4, 8)):
            r = request(f"a{tick:03d}-{n}", rng.choice([20, 40, 60]) * GIB, user="alice", at=tick)
            waiting[r.key] = r
        if tick == 20:
            waiting[big.key] = big
        decision = scheduler.schedule(
            list(waiting.values()), now=tick + 0.9, reservations=reservations
        )
        reservations = dict(decision.reservations)
        for placement in decision.placements:
            scheduler.allocations.put(placement.allocation(provisional=False))
            ends[placement.key] = tick + rng.randint(1, 12)
            del waiting[placement.key]
            if placement.key == big.key:
                return tick, big.submitted_at
    return None, big.submitted_at


class TestNoStarvation:
    @pytest.mark.parametrize("seed", range(4))
    def test_a_long_waiting_users_request_is_placed_within_the_aging_bound(self, seed: int) -> None:
        placed, submitted = _stream(30.0, seed)
        # aged at submitted + 30, reserved by the next pass, placed once the jobs there end
        assert placed is not None and placed <= submitted + 30 + 12 + 2

    def test_without_aging_the_stream_of_small_ones_keeps_it_out(self) -> None:
        starved = [_stream(math.inf, seed)[0] for seed in range(4)]
        assert any(placed is None for placed in starved), starved
