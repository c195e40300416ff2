"""The free-VRAM index behind every decision, kept current one change at a time.

GPUs that take work (ready node, not cordoned) get ids in (node name, index) order. Per
vendor the index keeps, as sorted lists:

- ``by_free[v]``: (free MiB, gpu id) of every such GPU: the tightest (or emptiest) GPU with
  at least ``need`` free is one bisection away;
- ``kth[v][k]`` for k >= 2: (k-th largest free on the node, node rank) of every node with at
  least k GPUs of that vendor: the nodes that can take k GPUs of ``need`` are those whose
  entry is >= ``need``, again one bisection away.

A change to one GPU moves its entry in ``by_free`` and, for its node, the entries whose
k-th largest value changed: O(GPUs per node x log GPUs), memmove aside.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable

from gridweave_controller.vendors import Vendor
from job_gateway.inventory.models import Gpu, Inventory

__all__ = ["ACCEPTED", "VENDOR_CODES", "VENDOR_NAMES", "WINDOW", "CapacityIndex"]

VENDOR_NAMES = ("nvidia", "amd")
VENDOR_CODES = {"nvidia": 0, "amd": 1}
#: The vendor codes a request's ``vendor`` accepts (never mixed on one request).
ACCEPTED: dict[Vendor, tuple[int, ...]] = {"nvidia": (0,), "amd": (1,), "any": (0, 1)}
#: How many candidate nodes a multi-GPU binpack decision compares exactly.
WINDOW = 8
_FIRST = -1  # sorts before every gpu id and node rank: (need, _FIRST) bisects to "free >= need"


class CapacityIndex:
    """Free VRAM per schedulable GPU and the sorted views over it; capacity for impossibility."""

    def __init__(self, inventory: Inventory, held: Callable[[str, int], int]) -> None:
        nodes = sorted(inventory.nodes, key=lambda node: node.name)
        self.names = [node.name for node in nodes]
        self.rank = {name: rank for rank, name in enumerate(self.names)}
        self.gid: dict[tuple[str, int], int] = {}
        self.g_rank: list[int] = []
        self.g_index: list[int] = []
        self.g_vendor: list[int] = []
        self.g_total: list[int] = []
        self.free: list[int] = []
        self.node_gids: list[tuple[list[int], list[int]]] = []
        self.profile: list[list[list[int]]] = []
        # Capacity over every GPU, whatever its state: what could ever be placed.
        self.node_totals: list[tuple[list[int], list[int]]] = []
        self.largest: list[Gpu | None] = [None, None]
        for rank, node in enumerate(nodes):
            gids: tuple[list[int], list[int]] = ([], [])
            totals: tuple[list[int], list[int]] = ([], [])
            for gpu in sorted(node.gpus, key=lambda gpu: gpu.index):
                vendor = VENDOR_CODES[gpu.vendor]
                totals[vendor].append(gpu.vram_mb)
                best = self.largest[vendor]
                if best is None or gpu.vram_mb > best.vram_mb:
                    self.largest[vendor] = gpu
                if not (node.ready and gpu.schedulable):
                    continue
                gid = len(self.free)
                self.gid[(node.name, gpu.index)] = gid
                self.g_rank.append(rank)
                self.g_index.append(gpu.index)
                self.g_vendor.append(vendor)
                self.g_total.append(gpu.vram_mb)
                self.free.append(gpu.vram_mb - held(node.name, gpu.index))
                gids[vendor].append(gid)
            self.node_gids.append(gids)
            self.profile.append([self._frees_desc(gids[0]), self._frees_desc(gids[1])])
            self.node_totals.append(
                (sorted(totals[0], reverse=True), sorted(totals[1], reverse=True))
            )
        # pool_free[v]: the free VRAM of every GPU of vendor v that takes work.
        self.pool_free = [
            sum(f for f, v in zip(self.free, self.g_vendor, strict=True) if v == vendor)
            for vendor in (0, 1)
        ]
        self.by_free = tuple(
            sorted((self.free[g], g) for g in range(len(self.free)) if self.g_vendor[g] == v)
            for v in (0, 1)
        )
        self.kth: tuple[list[list[tuple[int, int]]], ...] = tuple(
            self._kth_lists(v) for v in (0, 1)
        )
        # capacity[v][k]: the largest k-th largest total VRAM of vendor v on any node.
        self.capacity: tuple[list[int], ...] = tuple(self._capacity(v) for v in (0, 1))

    # -- building ---------------------------------------------------------------------------

    def _frees_desc(self, gids: Iterable[int]) -> list[int]:
        free = self.free
        return sorted((free[g] for g in gids), reverse=True)

    def _kth_lists(self, vendor: int) -> list[list[tuple[int, int]]]:
        most = max((len(gids[vendor]) for gids in self.node_gids), default=0)
        lists: list[list[tuple[int, int]]] = [[] for _ in range(most + 1)]
        for rank, profiles in enumerate(self.profile):
            frees = profiles[vendor]
            for k in range(2, len(frees) + 1):
                lists[k].append((frees[k - 1], rank))
        for entries in lists:
            entries.sort()
        return lists

    def _capacity(self, vendor: int) -> list[int]:
        most = max((len(totals[vendor]) for totals in self.node_totals), default=0)
        capacity = [0] * (most + 1)
        for totals in self.node_totals:
            for k, total in enumerate(totals[vendor], start=1):
                if total > capacity[k]:
                    capacity[k] = total
        return capacity

    # -- questions --------------------------------------------------------------------------

    def possible(self, need: int, count: int, accepts: tuple[int, ...]) -> bool:
        """Some node has ``count`` GPUs of one accepted vendor with ``need`` MiB in total."""
        for vendor in accepts:
            capacity = self.capacity[vendor]
            if count < len(capacity) and capacity[count] >= need:
                return True
        return False

    def most_gpus(self, need: int, accepts: tuple[int, ...]) -> int:
        """The most GPUs of one accepted vendor with ``need`` MiB in total on one node."""
        return max(
            (
                sum(1 for total in totals[v] if total >= need)
                for totals in self.node_totals
                for v in accepts
            ),
            default=0,
        )

    def find(
        self, need: int, count: int, accepts: tuple[int, ...], spread: bool
    ) -> list[int] | None:
        """The GPU ids binpack (tightest) or spread (emptiest) picks now, or None.

        ``accepts`` is in order of preference: the first vendor with room wins.
        """
        if count == 1:
            for vendor in accepts:
                entries = self.by_free[vendor]
                if not entries or entries[-1][0] < need:
                    continue
                floor = entries[-1][0] if spread else need
                return [entries[bisect_left(entries, (floor, _FIRST))][1]]
            return None
        for vendor in accepts:
            lists = self.kth[vendor]
            if count >= len(lists):
                continue
            entries = lists[count]
            if not entries or entries[-1][0] < need:
                continue
            if spread:
                rank = entries[bisect_left(entries, (entries[-1][0], _FIRST))][1]
                return self._on_node(rank, vendor, need, count, spread=True)
            # The WINDOW nodes with the smallest k-th largest free VRAM >= need are compared:
            # the one whose chosen GPUs leave the least VRAM free wins (ties: node rank).
            start = bisect_left(entries, (need, _FIRST))
            best: tuple[int, int] | None = None
            chosen: list[int] = []
            for _, rank in entries[start : start + WINDOW]:
                fits = self._on_node(rank, vendor, need, count, spread=False)
                left = sum(self.free[g] for g in fits)
                if best is None or (left, rank) < best:
                    best, chosen = (left, rank), fits
            return chosen
        return None

    def _on_node(self, rank: int, vendor: int, need: int, count: int, spread: bool) -> list[int]:
        free = self.free
        fits = [g for g in self.node_gids[rank][vendor] if free[g] >= need]
        if spread:
            fits.sort(key=lambda g: (-free[g], g))
        else:
            fits.sort(key=lambda g: (free[g], g))
        return fits[:count]

    # -- changes ----------------------------------------------------------------------------

    def take(self, gids: list[int], amount: int) -> None:
        """Lower the free VRAM of ``gids`` (one node, one vendor) by ``amount`` (may go < 0)."""
        free = self.free
        for gid in gids:
            self._set(gid, free[gid] - amount)
        self._reprofile(self.g_rank[gids[0]], self.g_vendor[gids[0]])

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
        for rank, vendor in touched:
            self._reprofile(rank, vendor)

    def _set(self, gid: int, value: int) -> None:
        vendor = self.g_vendor[gid]
        entries = self.by_free[vendor]
        old = self.free[gid]
        del entries[bisect_left(entries, (old, gid))]
        insort(entries, (value, gid))
        self.free[gid] = value
        self.pool_free[vendor] += value - old

    def _reprofile(self, rank: int, vendor: int) -> None:
        old = self.profile[rank][vendor]
        new = self._frees_desc(self.node_gids[rank][vendor])
        lists = self.kth[vendor]
        for k in range(2, len(new) + 1):
            before, after = old[k - 1], new[k - 1]
            if before != after:
                entries = lists[k]
                del entries[bisect_left(entries, (before, rank))]
                insort(entries, (after, rank))
        self.profile[rank][vendor] = new
