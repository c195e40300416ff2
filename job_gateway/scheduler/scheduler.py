"""The scheduler: waiting requests onto node + GPU indices, pure and deterministic.

No I/O and no clock: the caller passes ``now``. The same inventory, allocations, shares,
requests, ``now`` and reservations always give the same decision. The placement rule, the
fair share, the backfill and the aging bound are documented in docs/architecture.md ("Job
gateway: inventory and scheduler"); in short, one pass:

1. takes the priority classes in turn, highest first (priority is strict);
2. tries first, in rank order, the requests the last pass gave a reservation (still
   valid): each is placed if it fits, else its reservation is held, and everything tried
   after it may use only what it leaves;
3. reports as impossible each request no node could ever hold (the API's 422);
4. tries the class's other requests in fair order (``fairness.py``: the user with the lowest
   weighted dominant share first, each user's oldest first) and places each on
   ``gpu_count`` GPUs of one pool (vendor, real GPUs for ``real_gpu``, one model for
   ``gpu_models``) on one node with ``vram_mb`` free on each and the request's CPU and
   memory free on the node: ``fgd`` (default) where expected usable capacity drops least
   (``fgd.py``), ``binpack`` the tightest GPUs, ``spread`` the emptiest; ``vendor: any``
   tries first the pool with more free VRAM beyond what the waiting vendor-specific
   requests want; a request that does not fit now waits, and the next ones are still tried
   (backfill);
5. gives a request that has waited ``aging_s`` or more and still does not fit a
   reservation (at most ``max_reservations`` held at once): GPUs on one node, kept by the
   next passes while still valid, on which every request after it may use only what it
   leaves. Its holders only leave, so it fits once the work there when it was reserved has
   ended. One pass is in ``_pass.py``.

Placements inside a pass count for the requests after them; nothing is held when the pass
returns (put each placement in the allocation map as you write it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from job_gateway.inventory.models import Inventory
from job_gateway.scheduler._index import UNLIMITED, CapacityIndex
from job_gateway.scheduler._pass import Pass, accepts_of, impossible_of, possible
from job_gateway.scheduler.allocations import AllocationMap
from job_gateway.scheduler.fairness import Totals, check_weights
from job_gateway.scheduler.fragmentation import measure_fragmentation
from job_gateway.scheduler.types import (
    POLICIES,
    AllocationKey,
    Decision,
    Fragmentation,
    Impossible,
    PlacementRequest,
    Policy,
    Reservation,
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
    """The order of one user's queue: priority (high first), submission time, kind, name."""
    return (-request.priority, request.submitted_at, request.kind, request.name)


class Scheduler:
    """Decisions over one inventory and one allocation map, which it follows as it changes.

    ``shares``: each user's weight in the fair share (1 for a user not named).
    """

    def __init__(
        self,
        inventory: Inventory,
        allocations: AllocationMap | None = None,
        *,
        policy: Policy = "fgd",
        aging_s: float = DEFAULT_AGING_S,
        max_reservations: int = DEFAULT_MAX_RESERVATIONS,
        shares: Mapping[str, float] | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}: {', '.join(POLICIES)}")
        if aging_s < 0 or max_reservations < 0:
            raise ValueError("aging_s and max_reservations must not be negative")
        self.policy: Policy = policy
        self.aging_s = aging_s
        self.max_reservations = max_reservations
        self.allocations = allocations if allocations is not None else AllocationMap()
        self._shares = check_weights(shares or {})
        self._inventory = inventory
        self._index = CapacityIndex(inventory, self.allocations)
        self._totals = _totals(inventory)
        self._unsubscribe = self.allocations.subscribe(self._changed)

    @property
    def inventory(self) -> Inventory:
        """The inventory decisions are made on."""
        return self._inventory

    def set_inventory(self, inventory: Inventory) -> None:
        """Decide on a new inventory from now on (the allocations are kept)."""
        self._inventory = inventory
        self._index = CapacityIndex(inventory, self.allocations)
        self._totals = _totals(inventory)

    @property
    def shares(self) -> Mapping[str, float]:
        """Each named user's weight in the fair share."""
        return dict(self._shares)

    def set_shares(self, shares: Mapping[str, float]) -> None:
        """Weigh users by ``shares`` from the next pass on (1 for a user not named)."""
        self._shares = check_weights(shares)

    def close(self) -> None:
        """Stop following the allocation map."""
        self._unsubscribe()

    # -- decisions --------------------------------------------------------------------------

    def check(self, request: PlacementRequest) -> Impossible | None:
        """Why no node of the inventory can ever hold ``request``, or None if one could."""
        accepts = accepts_of(self._index, request)
        if possible(self._index, request, accepts):
            return None
        return impossible_of(self._index, request, accepts)

    def schedule(
        self,
        requests: Iterable[PlacementRequest],
        *,
        now: float,
        reservations: Mapping[AllocationKey, Reservation] | None = None,
    ) -> Decision:
        """One pass over the waiting ``requests`` (see the module's docstring).

        A request whose key already holds in the allocation map is placed already: it is
        left out, so nothing is ever placed twice.
        """
        holding = self.allocations
        ordered = sorted((r for r in requests if r.key not in holding), key=rank_key)
        if len({request.key for request in ordered}) != len(ordered):
            raise ValueError("two waiting requests have the same kind and name")
        one = Pass(
            self._index,
            holding,
            policy=self.policy,
            max_reservations=self.max_reservations,
            aging_s=self.aging_s,
            now=now,
            totals=self._totals,
            weights=self._shares,
        )
        return one.run(ordered, reservations or {}, rank_key)

    def fragmentation(self, requests: Iterable[PlacementRequest]) -> Fragmentation:
        """Free VRAM the waiting ``requests`` cannot use (see fragmentation.py for the rule)."""
        return measure_fragmentation(self._index, requests)

    def free_mb(self, node: str, index: int) -> int | None:
        """Free VRAM of a GPU that takes work, MiB; None for another (cordoned, NotReady...)."""
        gid = self._index.gid.get((node, index))
        return None if gid is None else self._index.free[gid]

    def free_node(self, node: str) -> tuple[int | None, int | None]:
        """(CPU millis, memory MiB) free on ``node``; None where it declares none (or is
        unknown)."""
        index = self._index
        rank = index.rank.get(node)
        if rank is None:
            return None, None
        cpu = None if index.cpu_total[rank] == UNLIMITED else index.cpu[rank]
        memory = None if index.memory_total[rank] == UNLIMITED else index.memory[rank]
        return cpu, memory

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
        index = self._index
        found = [g for i in indices if (g := index.gid.get((node, i))) is not None]
        if found:
            index.refresh(found, self.allocations.held_mb)
        rank = index.rank.get(node)
        if rank is not None:
            index.refresh_node(rank, self.allocations)


def _totals(inventory: Inventory) -> Totals:
    """What shares are fractions of: VRAM x GPUs of the GPUs that take work, and the CPU and
    memory of the ready nodes that declare them."""
    vram = sum(g.vram_mb for n in inventory.nodes if n.ready for g in n.gpus if g.schedulable)
    cpu = sum(n.cpu_millis or 0 for n in inventory.nodes if n.ready)
    memory = sum(n.memory_mb or 0 for n in inventory.nodes if n.ready)
    return vram, cpu, memory


def schedule(
    inventory: Inventory,
    allocations: AllocationMap,
    requests: Iterable[PlacementRequest],
    *,
    now: float,
    policy: Policy = "fgd",
    aging_s: float = DEFAULT_AGING_S,
    reservations: Mapping[AllocationKey, Reservation] | None = None,
    shares: Mapping[str, float] | None = None,
) -> Decision:
    """One pass with a throwaway :class:`Scheduler` (builds the index: O(GPUs log GPUs))."""
    scheduler = Scheduler(inventory, allocations, policy=policy, aging_s=aging_s, shares=shares)
    try:
        return scheduler.schedule(requests, now=now, reservations=reservations)
    finally:
        scheduler.close()
