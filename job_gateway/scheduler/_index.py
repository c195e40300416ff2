"""The free-VRAM index behind every decision, kept current one change at a time.

GPUs that take work (ready node, not cordoned) get ids in (node name, index) order. The GPUs
fall into pools: pool 0 (1) is every NVIDIA (AMD) GPU; pools 2 and 3 are the real ones of
each vendor, kept only when the inventory mixes real and simulated GPUs (a request that
needs a real device, ``real_gpu``, draws from them; in an inventory of one kind pools 0
and 1 already are what it may use). Per pool the index keeps, as sorted lists:

- ``by_free[p]``: (free MiB, gpu id) of every such GPU: the tightest (or emptiest) GPU with
  at least ``need`` free is one bisection away;
- ``kth[p][k]`` for k >= 2: (k-th largest free on the node, node rank) of every node with at
  least k GPUs of that pool: the nodes that can take k GPUs of ``need`` are those whose
  entry is >= ``need``, again one bisection away.

A change to one GPU moves its entry in ``by_free`` and, for its node, the entries whose
k-th largest value changed: O(GPUs per node x log GPUs), memmove aside; a real GPU of a
mixed inventory does so in both of its pools.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable

from gridweave_controller.vendors import Vendor
from job_gateway.inventory.models import Gpu, Inventory

__all__ = ["ACCEPTED", "POOLS", "REAL", "VENDOR_CODES", "VENDOR_NAMES", "WINDOW", "CapacityIndex"]

VENDOR_NAMES = ("nvidia", "amd")
VENDOR_CODES = {"nvidia": 0, "amd": 1}
#: The vendor codes a request's ``vendor`` accepts (never mixed on one request).
ACCEPTED: dict[Vendor, tuple[int, ...]] = {"nvidia": (0,), "amd": (1,), "any": (0, 1)}
#: A vendor's pool of real GPUs is its code + REAL; pool p's GPUs are of vendor p % REAL.
REAL = 2
POOLS = 2 * REAL
#: How many candidate nodes a multi-GPU binpack decision compares exactly.
WINDOW = 8
_FIRST = -1  # sorts before every gpu id and node rank: (need, _FIRST) bisects to "free >= need"


class CapacityIndex:
    """Free VRAM per schedulable GPU and the sorted views over it; capacity for impossibility."""

    def __init__(self, inventory: Inventory, held: Callable[[str, int], int]) -> None:
        nodes = sorted(inventory.nodes, key=lambda node: node.name)
        kinds = {gpu.simulated for node in nodes for gpu in node.gpus}
        #: Real and simulated GPUs both: the real ones also sit in pools REAL and REAL + 1.
        self.mixed = len(kinds) == 2
        self.names = [node.name for node in nodes]
        self.rank = {name: rank for rank, name in enumerate(self.names)}
        self.gid: dict[tuple[str, int], int] = {}
        self.g_rank: list[int] = []
        self.g_index: list[int] = []
        self.g_vendor: list[int] = []
        #: The GPU's second pool (its vendor's real pool in a mixed inventory), else -1.
        self.g_twin: list[int] = []
        self.g_total: list[int] = []
        self.free: list[int] = []
        self.node_gids: list[tuple[list[int], ...]] = []
        self.profile: list[list[list[int]]] = []
        # Capacity over every GPU, whatever its state: what could ever be placed.
        self.node_totals: list[tuple[list[int], ...]] = []
        self.largest: list[Gpu | None] = [None] * POOLS
        for rank, node in enumerate(nodes):
            gids: tuple[list[int], ...] = tuple([] for _ in range(POOLS))
            totals: tuple[list[int], ...] = tuple([] for _ in range(POOLS))
            for gpu in sorted(node.gpus, key=lambda gpu: gpu.index):
                vendor = VENDOR_CODES[gpu.vendor]
                pools = (vendor, vendor + REAL) if self.mixed and not gpu.simulated else (vendor,)
                for pool in pools:
                    totals[pool].append(gpu.vram_mb)
                    best = self.largest[pool]
                    if best is None or gpu.vram_mb > best.vram_mb:
                        self.largest[pool] = gpu
                if not (node.ready and gpu.schedulable):
                    continue
                gid = len(self.free)
                self.gid[(node.name, gpu.index)] = gid
                self.g_rank.append(rank)
                self.g_index.append(gpu.index)
                self.g_vendor.append(vendor)
                self.g_twin.append(pools[-1] if len(pools) > 1 else -1)
                self.g_total.append(gpu.vram_mb)
                self.free.append(gpu.vram_mb - held(node.name, gpu.index))
                for pool in pools:
                    gids[pool].append(gid)
            self.node_gids.append(gids)
            self.profile.append([self._frees_desc(pool_gids) for pool_gids in gids])
            self.node_totals.append(tuple(sorted(pool, reverse=True) for pool in totals))
        # pool_free[p]: the free VRAM of every GPU of pool p that takes work.
        self.pool_free = [
            sum(self.free[g] for gids in self.node_gids for g in gids[pool])
            for pool in range(POOLS)
        ]
        self.by_free = tuple(
            sorted((self.free[g], g) for gids in self.node_gids for g in gids[pool])
            for pool in range(POOLS)
        )
        self.kth: tuple[list[list[tuple[int, int]]], ...] = tuple(
            self._kth_lists(pool) for pool in range(POOLS)
        )
        # capacity[p][k]: the largest k-th largest total VRAM of pool p on any node.
        self.capacity: tuple[list[int], ...] = tuple(self._capacity(p) for p in range(POOLS))

    def accepts(self, vendor: Vendor, real_gpu: bool) -> tuple[int, ...]:
        """The pools a request of ``vendor`` draws from, in order of preference: a request
        that needs a real GPU only the real pools, when the inventory has simulated GPUs too
        (with none real, the simulated: admission decides whether that may be served)."""
        accepts = ACCEPTED[vendor]
        if real_gpu and self.mixed:
            return tuple(code + REAL for code in accepts)
        return accepts

    def in_pool(self, gid: int, pool: int) -> bool:
        """GPU ``gid`` belongs to ``pool``."""
        return self.g_vendor[gid] == pool or self.g_twin[gid] == pool

    # -- building ---------------------------------------------------------------------------

    def _frees_desc(self, gids: Iterable[int]) -> list[int]:
        free = self.free
        return sorted((free[g] for g in gids), reverse=True)

    def _kth_lists(self, pool: int) -> list[list[tuple[int, int]]]:
        most = max((len(gids[pool]) for gids in self.node_gids), default=0)
        lists: list[list[tuple[int, int]]] = [[] for _ in range(most + 1)]
        for rank, profiles in enumerate(self.profile):
            frees = profiles[pool]
            for k in range(2, len(frees) + 1):
                lists[k].append((frees[k - 1], rank))
        for entries in lists:
            entries.sort()
        return lists

    def _capacity(self, pool: int) -> list[int]:
        most = max((len(totals[pool]) for totals in self.node_totals), default=0)
        capacity = [0] * (most + 1)
        for totals in self.node_totals:
            for k, total in enumerate(totals[pool], start=1):
                if total > capacity[k]:
                    capacity[k] = total
        return capacity

    # -- questions --------------------------------------------------------------------------

    def possible(self, need: int, count: int, accepts: tuple[int, ...]) -> bool:
        """Some node has ``count`` GPUs of one accepted pool with ``need`` MiB in total."""
        for pool in accepts:
            capacity = self.capacity[pool]
            if count < len(capacity) and capacity[count] >= need:
                return True
        return False

    def most_gpus(self, need: int, accepts: tuple[int, ...]) -> int:
        """The most GPUs of one accepted pool with ``need`` MiB in total on one node."""
        return max(
            (
                sum(1 for total in totals[pool] if total >= need)
                for totals in self.node_totals
                for pool in accepts
            ),
            default=0,
        )

    def find(
        self, need: int, count: int, accepts: tuple[int, ...], spread: bool
    ) -> list[int] | None:
        """The GPU ids binpack (tightest) or spread (emptiest) picks now, or None.

        ``accepts`` (pools) is in order of preference: the first pool with room wins.
        """
        if count == 1:
            for pool in accepts:
                entries = self.by_free[pool]
                if not entries or entries[-1][0] < need:
                    continue
                floor = entries[-1][0] if spread else need
                return [entries[bisect_left(entries, (floor, _FIRST))][1]]
            return None
        for pool in accepts:
            lists = self.kth[pool]
            if count >= len(lists):
                continue
            entries = lists[count]
            if not entries or entries[-1][0] < need:
                continue
            if spread:
                rank = entries[bisect_left(entries, (entries[-1][0], _FIRST))][1]
                return self._on_node(rank, pool, need, count, spread=True)
            # The WINDOW nodes with the smallest k-th largest free VRAM >= need are compared:
            # the one whose chosen GPUs leave the least VRAM free wins (ties: node rank).
            start = bisect_left(entries, (need, _FIRST))
            best: tuple[int, int] | None = None
            chosen: list[int] = []
            for _, rank in entries[start : start + WINDOW]:
                fits = self._on_node(rank, pool, need, count, spread=False)
                left = sum(self.free[g] for g in fits)
                if best is None or (left, rank) < best:
                    best, chosen = (left, rank), fits
            return chosen
        return None

    def _on_node(self, rank: int, pool: int, need: int, count: int, spread: bool) -> list[int]:
        free = self.free
        fits = [g for g in self.node_gids[rank][pool] if free[g] >= need]
        if spread:
            fits.sort(key=lambda g: (-free[g], g))
        else:
            fits.sort(key=lambda g: (free[g], g))
        return fits[:count]

    # -- changes ----------------------------------------------------------------------------

    def take(self, gids: list[int], amount: int) -> None:
        """Lower the free VRAM of ``gids`` (one node, one pool) by ``amount`` (may go < 0)."""
        free = self.free
        for gid in gids:
            self._set(gid, free[gid] - amount)
        rank = self.g_rank[gids[0]]
        self._reprofile(rank, self.g_vendor[gids[0]])
        if self.mixed:  # the GPUs' real pool too (a job's GPUs may be real and simulated)
            for twin in {self.g_twin[gid] for gid in gids}:
                if twin >= 0:
                    self._reprofile(rank, twin)

    def refresh(self, gids: Iterable[int], held: Callable[[str, int], int]) -> None:
        """Recompute the free VRAM of ``gids`` from ``held`` (the allocation map)."""
        touched: set[tuple[int, int]] = set()
        names, g_index, g_total, free = self.names, self.g_index, self.g_total, self.free
        for gid in gids:
            rank = self.g_rank[gid]
            value = g_total[gid] - held(names[rank], g_index[gid])
            if value != free[gid]:
                self._set(gid, value)
                touched.add((rank, self.g_vendor[gid]))
                if self.g_twin[gid] >= 0:
                    touched.add((rank, self.g_twin[gid]))
        for rank, pool in touched:
            self._reprofile(rank, pool)

    def _set(self, gid: int, value: int) -> None:
        vendor = self.g_vendor[gid]
        entries = self.by_free[vendor]
        old = self.free[gid]
        del entries[bisect_left(entries, (old, gid))]
        insort(entries, (value, gid))
        self.free[gid] = value
        self.pool_free[vendor] += value - old
        twin = self.g_twin[gid]
        if twin >= 0:
            entries = self.by_free[twin]
            del entries[bisect_left(entries, (old, gid))]
            insort(entries, (value, gid))
            self.pool_free[twin] += value - old

    def _reprofile(self, rank: int, pool: int) -> None:
        old = self.profile[rank][pool]
        new = self._frees_desc(self.node_gids[rank][pool])
        lists = self.kth[pool]
        for k in range(2, len(new) + 1):
            before, after = old[k - 1], new[k - 1]
            if before != after:
                entries = lists[k]
                del entries[bisect_left(entries, (before, rank))]
                insort(entries, (after, rank))
        self.profile[rank][pool] = new
