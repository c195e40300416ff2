"""The scheduler: waiting requests onto node + GPU indices, pure and deterministic.

No I/O and no clock: the caller passes ``now``. The same inventory, allocations, requests,
``now`` and reservations always give the same decision. The placement rule, the backfill
and the aging bound are documented in docs/architecture.md ("Job gateway: inventory and
scheduler"); in short, one pass:

1. ranks the requests: higher ``priority`` first, then earlier ``submitted_at``, then key;
2. reports as impossible each request no node's GPUs could ever hold (the API's 422);
3. places each other request, in rank order, on ``gpu_count`` GPUs of one vendor on one
   node with ``vram_mb`` free on each (real GPUs only for ``real_gpu``, when the inventory
   has any: the index's pools): binpack takes the tightest GPUs that fit (exactly
   for one GPU; for several, the best of the 8 tightest candidate nodes), spread the
   emptiest; ``vendor: any`` tries first the pool with more free VRAM beyond what the
   waiting vendor-specific requests want; a request that does not fit now waits, and the
   next ones are still tried (backfill);
4. gives a request that has waited ``aging_s`` or more and still does not fit a
   reservation: GPUs on one node (kept from the previous pass while still valid) on which
   every lower-ranked request may use only the VRAM the reservation leaves. Its holders
   only leave, so it fits once the work there when it was reserved has ended.

Placements inside a pass count for the requests after them; nothing is held when the pass
returns (put each placement in the allocation map as you write it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from job_gateway.inventory.models import Inventory
from job_gateway.scheduler._index import ACCEPTED, REAL, CapacityIndex
from job_gateway.scheduler.allocations import AllocationMap
from job_gateway.scheduler.fragmentation import measure_fragmentation
from job_gateway.scheduler.types import (
    REAL_GPU_BUSY,
    AllocationKey,
    Decision,
    Fragmentation,
    Impossible,
    Placement,
    PlacementRequest,
    Policy,
    Reservation,
    Unplaced,
)

__all__ = [
    "DEFAULT_AGING_S",
    "DEFAULT_MAX_RESERVATIONS",
    "Scheduler",
    "rank_key",
    "schedule",
]

#: A request waiting this long (seconds) stops being overtaken: it gets a reservation.
DEFAULT_AGING_S = 300.0
#: At most this many aged requests hold reservations at once (the highest ranked).
DEFAULT_MAX_RESERVATIONS = 16


def rank_key(request: PlacementRequest) -> tuple[int, float, str, str]:
    """The order of the queue: priority (high first), submission time, kind, name."""
    return (-request.priority, request.submitted_at, request.kind, request.name)


class Scheduler:
    """Decisions over one inventory and one allocation map, which it follows as it changes."""

    def __init__(
        self,
        inventory: Inventory,
        allocations: AllocationMap | None = None,
        *,
        policy: Policy = "binpack",
        aging_s: float = DEFAULT_AGING_S,
        max_reservations: int = DEFAULT_MAX_RESERVATIONS,
    ) -> None:
        if policy not in ("binpack", "spread"):
            raise ValueError(f"unknown policy {policy!r}: binpack or spread")
        if aging_s < 0 or max_reservations < 0:
            raise ValueError("aging_s and max_reservations must not be negative")
        self.policy: Policy = policy
        self.aging_s = aging_s
        self.max_reservations = max_reservations
        self.allocations = allocations if allocations is not None else AllocationMap()
        self._inventory = inventory
        self._index = CapacityIndex(inventory, self.allocations.held_mb)
        self._unsubscribe = self.allocations.subscribe(self._changed)

    @property
    def inventory(self) -> Inventory:
        """The inventory decisions are made on."""
        return self._inventory

    def set_inventory(self, inventory: Inventory) -> None:
        """Decide on a new inventory from now on (the allocations are kept)."""
        self._inventory = inventory
        self._index = CapacityIndex(inventory, self.allocations.held_mb)

    def close(self) -> None:
        """Stop following the allocation map."""
        self._unsubscribe()

    # -- decisions --------------------------------------------------------------------------

    def check(self, request: PlacementRequest) -> Impossible | None:
        """Why no GPU in the inventory can ever hold ``request``, or None if one could."""
        accepts = self._index.accepts(request.vendor, request.real_gpu)
        if self._index.possible(request.vram_mb, request.gpu_count, accepts):
            return None
        return self._impossible(request, accepts)

    def schedule(
        self,
        requests: Iterable[PlacementRequest],
        *,
        now: float,
        reservations: Mapping[AllocationKey, Reservation] | None = None,
    ) -> Decision:
        """One pass over the waiting ``requests`` (see the module's docstring).

        A request whose key already holds VRAM in the allocation map is placed already: it
        is left out, so nothing is ever placed twice.
        """
        holding = self.allocations
        ordered = sorted((r for r in requests if r.key not in holding), key=rank_key)
        if len({request.key for request in ordered}) != len(ordered):
            raise ValueError("two waiting requests have the same kind and name")
        index = self._index
        spread = self.policy == "spread"
        previous = reservations or {}
        placements: list[Placement] = []
        impossible: list[Impossible] = []
        waiting: list[PlacementRequest] = []
        kept: dict[AllocationKey, Reservation] = {}
        unplaced: dict[AllocationKey, Unplaced] = {}
        taken: list[int] = []
        # VRAM the vendor-specific requests still want from each vendor: "any" goes first to
        # the vendor whose pool has the most free VRAM beyond it.
        wanted = [0, 0]
        for request in ordered:
            if request.vendor != "any":
                accepts = index.accepts(request.vendor, request.real_gpu)
                if index.possible(request.vram_mb, request.gpu_count, accepts):
                    wanted[accepts[0] % REAL] += request.vram_mb * request.gpu_count
        try:
            for request in ordered:
                need, count = request.vram_mb, request.gpu_count
                accepts = index.accepts(request.vendor, request.real_gpu)
                if not index.possible(need, count, accepts):
                    impossible.append(self._impossible(request, accepts))
                    continue
                if len(accepts) > 1:
                    pool = index.pool_free
                    first, second = accepts
                    if pool[second] - wanted[second % REAL] > pool[first] - wanted[first % REAL]:
                        accepts = (second, first)
                gids = index.find(need, count, accepts, spread)
                if gids is not None:
                    index.take(gids, need)
                    taken += gids
                    if request.vendor != "any":
                        wanted[accepts[0] % REAL] -= need * count
                    placements.append(self._placement(request, gids))
                    continue
                waiting.append(request)
                if accepts[0] >= REAL:
                    unplaced[request.key] = self._real_gpu_busy(request, spread)
                if len(kept) < self.max_reservations and now - request.submitted_at >= self.aging_s:
                    held = self._reserve(request, accepts, previous.get(request.key))
                    if held is not None:
                        index.take(held, need)
                        taken += held
                        placed = self._placement(request, held)
                        kept[request.key] = Reservation(
                            request.key, placed.node, placed.gpu_indices
                        )
        finally:
            index.refresh(taken, self.allocations.held_mb)
        return Decision(tuple(placements), tuple(impossible), tuple(waiting), kept, unplaced)

    def fragmentation(self, requests: Iterable[PlacementRequest]) -> Fragmentation:
        """Free VRAM the waiting ``requests`` cannot use (see fragmentation.py for the rule)."""
        return measure_fragmentation(self._index, requests)

    def free_mb(self, node: str, index: int) -> int | None:
        """Free VRAM of a GPU that takes work, MiB; None for another (cordoned, NotReady...)."""
        gid = self._index.gid.get((node, index))
        return None if gid is None else self._index.free[gid]

    def allocation_rate(self) -> float:
        """Held VRAM / total VRAM over the GPUs that take work (0 without any)."""
        index = self._index
        total = sum(index.g_total)
        if total == 0:
            return 0.0
        held = sum(min(t, t - f) for t, f in zip(index.g_total, index.free, strict=True))
        return held / total

    # -- internals --------------------------------------------------------------------------

    def _changed(self, node: str, indices: tuple[int, ...]) -> None:
        gid = self._index.gid
        found = [g for i in indices if (g := gid.get((node, i))) is not None]
        if found:
            self._index.refresh(found, self.allocations.held_mb)

    def _placement(self, request: PlacementRequest, gids: list[int]) -> Placement:
        index = self._index
        node = index.names[index.g_rank[gids[0]]]
        return Placement(request, node, tuple(sorted(index.g_index[g] for g in gids)))

    def _impossible(self, request: PlacementRequest, accepts: tuple[int, ...]) -> Impossible:
        index = self._index
        candidates = [gpu for pool in accepts if (gpu := index.largest[pool]) is not None]
        largest = max(candidates, key=lambda gpu: gpu.vram_mb, default=None)
        real_only = accepts[0] >= REAL
        return Impossible(request, largest, index.most_gpus(request.vram_mb, accepts), real_only)

    def _real_gpu_busy(self, request: PlacementRequest, spread: bool) -> Unplaced:
        """Why ``request`` (real GPUs only) waits: no real GPU has room; the message says
        whether a simulated one has (it changes with that, so what is written stays true)."""
        vendor = "" if request.vendor == "any" else f"{request.vendor} "
        wanted = (
            f"waiting for {request.gpu_count} real {vendor}GPU(s) with {request.vram_mb} "
            "MiB free on one node"
        )
        if self._index.find(request.vram_mb, request.gpu_count, ACCEPTED[request.vendor], spread):
            return Unplaced(
                REAL_GPU_BUSY, f"{wanted}: only simulated GPUs have room, and it needs a real one"
            )
        return Unplaced(REAL_GPU_BUSY, f"{wanted}: no GPU, real or simulated, has room now")

    def _reserve(
        self,
        request: PlacementRequest,
        accepts: tuple[int, ...],
        prior: Reservation | None,
    ) -> list[int] | None:
        if prior is not None:
            kept = self._still_valid(request, accepts, prior)
            if kept is not None:
                return kept
        index = self._index
        need, count, free = request.vram_mb, request.gpu_count, index.free
        endpoint_held = self.allocations.endpoint_held_mb
        best: tuple[tuple[int, int, int], list[int]] | None = None
        for rank, by_pool in enumerate(index.node_gids):
            for pool in accepts:
                frees = index.profile[rank][pool]  # the node's free VRAM, largest first
                if len(frees) < count or index.node_totals[rank][pool][count - 1] < need:
                    continue
                # Bounds from the k largest free: the exact deficit below is never smaller.
                if best is not None:
                    if (need - frees[count - 1], rank, pool) >= best[0]:
                        continue
                    bound = sum(need - f for f in frees[:count] if f < need)
                    if (bound, rank, pool) >= best[0]:
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
                if best is None or (deficit, rank, pool) < best[0]:
                    best = ((deficit, rank, pool), chosen)
        return None if best is None else best[1]

    def _still_valid(
        self, request: PlacementRequest, accepts: tuple[int, ...], prior: Reservation
    ) -> list[int] | None:
        index = self._index
        if len(prior.gpu_indices) != request.gpu_count:
            return None
        gids = [index.gid.get((prior.node, i)) for i in prior.gpu_indices]
        if any(g is None for g in gids):
            return None  # node gone, NotReady, or a GPU cordoned
        chosen = [g for g in gids if g is not None]
        if not any(all(index.in_pool(g, pool) for g in chosen) for pool in accepts):
            return None  # GPUs of two vendors, or none the request accepts
        endpoint_held = self.allocations.endpoint_held_mb
        for g in chosen:
            if index.g_total[g] - endpoint_held(prior.node, index.g_index[g]) < request.vram_mb:
                return None
        return chosen


def schedule(
    inventory: Inventory,
    allocations: AllocationMap,
    requests: Iterable[PlacementRequest],
    *,
    now: float,
    policy: Policy = "binpack",
    aging_s: float = DEFAULT_AGING_S,
    reservations: Mapping[AllocationKey, Reservation] | None = None,
) -> Decision:
    """One pass with a throwaway :class:`Scheduler` (builds the index: O(GPUs log GPUs))."""
    scheduler = Scheduler(inventory, allocations, policy=policy, aging_s=aging_s)
    try:
        return scheduler.schedule(requests, now=now, reservations=reservations)
    finally:
        scheduler.close()
