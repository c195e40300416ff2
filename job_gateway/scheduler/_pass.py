"""One scheduling pass (see scheduler.py for the rule it follows).

Within each priority class, highest first:

1. the requests that held a reservation in the last pass, still valid, in rank order
   (aged requests; they go first, so the aging bound holds whatever the fair order): each is
   placed if it fits now, else its reservation is held again;
2. the others in fair order (``fairness.FairOrder``): each placed if it fits, else it
   waits (backfill), and an aged one gets a reservation while fewer than the limit exist,
   unless a user of a lower share has a request waiting in the class (then it is behind by
   fairness, not starved).

A reservation held is taken in the index for the rest of the pass, so everything tried
after it may use only what it leaves. The index is restored when the pass ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby

from job_gateway.scheduler._index import CapacityIndex
from job_gateway.scheduler.allocations import AllocationMap
from job_gateway.scheduler.fairness import FairOrder, RankKey, Totals
from job_gateway.scheduler.fgd import FragmentationGradient, target_workload
from job_gateway.scheduler.types import (
    REAL_GPU_BUSY,
    AllocationKey,
    Decision,
    Impossible,
    Placement,
    PlacementRequest,
    Policy,
    Reservation,
    Unplaced,
)

__all__ = ["Pass", "accepts_of", "impossible_of", "possible"]

#: Requests that did not fit remembered per (pools, GPU count) in one pass: the check stays
#: short.
_REMEMBERED = 32


def accepts_of(index: CapacityIndex, request: PlacementRequest) -> tuple[int, ...]:
    """The pools ``request`` may draw from."""
    return index.accepts(request.vendor, request.real_gpu, request.gpu_models)


def possible(index: CapacityIndex, request: PlacementRequest, accepts: tuple[int, ...]) -> bool:
    """Some node of the inventory could ever hold ``request``."""
    return index.possible(
        request.vram_mb, request.gpu_count, accepts, request.cpu_millis, request.memory_mb
    )


def impossible_of(
    index: CapacityIndex, request: PlacementRequest, accepts: tuple[int, ...]
) -> Impossible:
    """Why no node could ever hold ``request`` (which must be impossible)."""
    real_only = request.real_gpu and index.mixed
    if not accepts:  # no GPU of the models asked
        models = index.models_of(request.vendor, request.real_gpu)
        return Impossible(request, None, 0, real_only, models=models)
    candidates = [gpu for pool in accepts if (gpu := index.largest[pool]) is not None]
    largest = max(candidates, key=lambda gpu: gpu.vram_mb, default=None)
    most_gpus = index.most_gpus(request.vram_mb, accepts)
    if not index.possible(request.vram_mb, request.gpu_count, accepts):
        return Impossible(request, largest, most_gpus, real_only)
    cpu, memory = index.most(request.vram_mb, request.gpu_count, accepts, cpu=request.cpu_millis)
    if cpu < request.cpu_millis:
        return Impossible(request, largest, most_gpus, real_only, "cpu_millis", cpu)
    return Impossible(request, largest, most_gpus, real_only, "memory_mb", memory)


class Pass:
    """The state of one pass: what the index holds for it, and the decision so far."""

    def __init__(
        self,
        index: CapacityIndex,
        allocations: AllocationMap,
        *,
        policy: Policy,
        max_reservations: int,
        aging_s: float,
        now: float,
        totals: Totals,
        weights: Mapping[str, float],
    ) -> None:
        self.index = index
        self.allocations = allocations
        self.spread = policy == "spread"
        self.fgd = policy == "fgd"
        self.max_reservations = max_reservations
        self.aging_s = aging_s
        self.now = now
        self.totals = totals
        self.weights = weights
        self.placements: list[Placement] = []
        self.impossible: list[Impossible] = []
        self.waiting: list[PlacementRequest] = []
        self.kept: dict[AllocationKey, Reservation] = {}
        self.unplaced: dict[AllocationKey, Unplaced] = {}
        self.taken: list[int] = []
        self.tried: list[AllocationKey] = []
        #: (pools, GPU count) -> (VRAM, CPU, memory) of the requests that did not fit.
        self.failed: dict[tuple[tuple[int, ...], int], list[tuple[int, int, int]]] = {}
        #: VRAM the vendor-specific requests still want from each vendor: "any" goes first
        #: to the vendor whose pool has the most free VRAM beyond it.
        self.wanted = [0, 0]
        self.chooser: FragmentationGradient | None = None

    def run(
        self,
        ordered: Sequence[PlacementRequest],
        previous: Mapping[AllocationKey, Reservation],
        rank_key: RankKey,
    ) -> Decision:
        """Place ``ordered`` (rank order); ``previous``: the last pass's reservations."""
        index = self.index
        if self.fgd:
            workload = target_workload(self.allocations.shape_counts(), ordered)
            self.chooser = FragmentationGradient(index, workload)
        for request in ordered:
            if request.vendor != "any":
                accepts = accepts_of(index, request)
                if possible(index, request, accepts):
                    self.wanted[index.pool_vendor[accepts[0]]] += (
                        request.vram_mb * request.gpu_count
                    )
        try:
            for _, members in groupby(ordered, key=lambda r: r.priority):
                self._class(list(members), previous, rank_key)
        finally:
            index.refresh(self.taken, self.allocations.held_mb)
            for rank in {index.g_rank[g] for g in self.taken}:
                index.refresh_node(rank, self.allocations)
        return Decision(
            tuple(self.placements),
            tuple(self.impossible),
            tuple(self.waiting),
            self.kept,
            self.unplaced,
            tuple(self.tried),
        )

    def _class(
        self,
        members: list[PlacementRequest],
        previous: Mapping[AllocationKey, Reservation],
        rank_key: RankKey,
    ) -> None:
        rest: list[PlacementRequest] = []
        placed_first: list[PlacementRequest] = []
        for request in members:  # rank order
            prior = previous.get(request.key)
            if prior is None or len(self.kept) >= self.max_reservations:
                rest.append(request)
                continue
            accepts = accepts_of(self.index, request)
            held = self._still_valid(request, accepts, prior)
            if held is None:
                rest.append(request)
                continue
            if self._try(request, accepts):
                placed_first.append(request)
                continue
            self._hold(request, held)
            self.kept[request.key] = Reservation(request.key, prior.node, prior.gpu_indices)
        fair = FairOrder(
            rest,
            totals=self.totals,
            held=self.allocations.user_held,
            weights=self.weights,
            rank_key=rank_key,
        )
        for request in placed_first:
            fair.charge(request)
        # The share of each user with a request left waiting in this class: a user above
        # another's share is behind by fairness, not starved, and gets no reservation.
        behind: dict[str, float] = {}
        for request in fair:
            accepts = accepts_of(self.index, request)
            if not possible(self.index, request, accepts):
                self.impossible.append(impossible_of(self.index, request, accepts))
                continue
            if self._try(request, accepts):
                fair.charge(request)
                continue
            share = fair.share(request.user)
            behind.setdefault(request.user, share)
            if (
                len(self.kept) < self.max_reservations
                and self.now - request.submitted_at >= self.aging_s
                and all(share <= other for u, other in behind.items() if u != request.user)
            ):
                held = self._reserve(request, accepts)
                if held is not None:
                    self._hold(request, held)
                    placement = self._placement(request, held)
                    self.kept[request.key] = Reservation(
                        request.key, placement.node, placement.gpu_indices
                    )

    def _try(self, request: PlacementRequest, accepts: tuple[int, ...]) -> bool:
        """Place ``request`` if it fits now; else it waits (and says why, where it can).

        Within a pass free capacity only shrinks (placements and reservations take, nothing
        gives back), so a request asking at least what one that did not fit asked (same
        pools, as many GPUs, as much VRAM, CPU and memory) does not fit either: it waits at
        once, without a search.
        """
        index = self.index
        self.tried.append(request.key)
        need, count = request.vram_mb, request.gpu_count
        cpu, memory = request.cpu_millis, request.memory_mb
        shape = (accepts, count)
        failed = self.failed.get(shape)
        if failed is not None:
            for n, c, m in failed:
                if need >= n and cpu >= c and memory >= m:
                    self._wait(request)
                    return False
        if len(accepts) > 1:
            wanted, pool_free, vendor_of = self.wanted, index.pool_free, index.pool_vendor
            if len(accepts) == 2:
                first, second = accepts
                if pool_free[second] - wanted[vendor_of[second]] > (
                    pool_free[first] - wanted[vendor_of[first]]
                ):
                    accepts = (second, first)
            else:
                accepts = tuple(sorted(accepts, key=lambda p: wanted[vendor_of[p]] - pool_free[p]))
        if self.chooser is not None:
            gids = self.chooser.choose(need, count, accepts, cpu, memory)
        else:
            gids = index.find(need, count, accepts, self.spread, cpu, memory)
        if gids is None:
            shapes = self.failed.setdefault(shape, [])
            if len(shapes) < _REMEMBERED:
                shapes.append((need, cpu, memory))
            self._wait(request)
            return False
        index.take(gids, need, cpu, memory)
        self.taken += gids
        if request.vendor != "any":
            self.wanted[index.g_pools[gids[0]][0]] -= need * count  # its vendor's pool
        self.placements.append(self._placement(request, gids))
        return True

    def _wait(self, request: PlacementRequest) -> None:
        self.waiting.append(request)
        if request.real_gpu and self.index.mixed:
            self.unplaced[request.key] = self._real_gpu_busy(request)

    def _hold(self, request: PlacementRequest, gids: list[int]) -> None:
        """Hold ``request``'s share of ``gids`` and their node for the rest of the pass."""
        self.index.take(gids, request.vram_mb, request.cpu_millis, request.memory_mb)
        self.taken += gids

    def _placement(self, request: PlacementRequest, gids: list[int]) -> Placement:
        index = self.index
        node = index.names[index.g_rank[gids[0]]]
        return Placement(request, node, tuple(sorted(index.g_index[g] for g in gids)))

    def _real_gpu_busy(self, request: PlacementRequest) -> Unplaced:
        """Why ``request`` (real GPUs only) waits: no real GPU has room; the message says
        whether a simulated one has (it changes with that, so what is written stays true)."""
        vendor = "" if request.vendor == "any" else f"{request.vendor} "
        wanted = (
            f"waiting for {request.gpu_count} real {vendor}GPU(s) with {request.vram_mb} "
            "MiB free on one node"
        )
        everywhere = self.index.accepts(request.vendor, False, request.gpu_models)
        if self.index.find(
            request.vram_mb,
            request.gpu_count,
            everywhere,
            self.spread,
            request.cpu_millis,
            request.memory_mb,
        ):
            return Unplaced(
                REAL_GPU_BUSY, f"{wanted}: only simulated GPUs have room, and it needs a real one"
            )
        return Unplaced(REAL_GPU_BUSY, f"{wanted}: no GPU, real or simulated, has room now")

    # -- reservations -----------------------------------------------------------------------

    def _reserve(self, request: PlacementRequest, accepts: tuple[int, ...]) -> list[int] | None:
        """The node and GPUs where ``request`` is closest to fitting (least VRAM missing)."""
        index = self.index
        need, count, free = request.vram_mb, request.gpu_count, index.free
        endpoint_held = self.allocations.endpoint_held_mb
        best: tuple[tuple[int, int, int], list[int]] | None = None
        for rank, by_pool in enumerate(index.node_gids):
            if not self._node_can_hold(rank, request):
                continue
            for place, pool in enumerate(accepts):  # ties: the order of preference, not ids
                frees = index.profile[rank][pool]  # the node's free VRAM, largest first
                if len(frees) < count or index.node_totals[rank][pool][count - 1] < need:
                    continue
                # Bounds from the k largest free: the exact deficit below is never smaller.
                if best is not None:
                    if (need - frees[count - 1], rank, place) >= best[0]:
                        continue
                    bound = sum(need - f for f in frees[:count] if f < need)
                    if (bound, rank, place) >= best[0]:
                        continue
                # Endpoints run until stopped: wait only where jobs alone stand in the way.
                name = index.names[rank]
                able = [
                    g
                    for g in by_pool[pool]
                    if index.g_total[g] - endpoint_held(name, index.g_index[g]) >= need
                ]
                if len(able) < count:
                    continue
                able.sort(key=lambda g: (-free[g], g))
                chosen = able[:count]
                deficit = sum(max(0, need - free[g]) for g in chosen)
                if best is None or (deficit, rank, place) < best[0]:
                    best = ((deficit, rank, place), chosen)
        return None if best is None else best[1]

    def _node_can_hold(self, rank: int, request: PlacementRequest) -> bool:
        """Node ``rank``'s CPU and memory hold ``request`` once its jobs leave (endpoints
        stay)."""
        index = self.index
        cpu, memory = self.allocations.endpoint_node_held(index.names[rank])
        return (
            index.cpu_total[rank] - cpu >= request.cpu_millis
            and index.memory_total[rank] - memory >= request.memory_mb
        )

    def _still_valid(
        self, request: PlacementRequest, accepts: tuple[int, ...], prior: Reservation
    ) -> list[int] | None:
        """The GPU ids of ``prior`` while it can still hold ``request``, else None."""
        index = self.index
        if not possible(index, request, accepts) or len(prior.gpu_indices) != request.gpu_count:
            return None
        gids = [index.gid.get((prior.node, i)) for i in prior.gpu_indices]
        if any(g is None for g in gids):
            return None  # node gone, NotReady, or a GPU cordoned
        chosen = [g for g in gids if g is not None]
        if not any(all(pool in index.g_pools[g] for g in chosen) for pool in accepts):
            return None  # GPUs of two vendors or models, or none the request accepts
        if not self._node_can_hold(index.g_rank[chosen[0]], request):
            return None
        endpoint_held = self.allocations.endpoint_held_mb
        for g in chosen:
            if index.g_total[g] - endpoint_held(prior.node, index.g_index[g]) < request.vram_mb:
                return None
        return chosen
