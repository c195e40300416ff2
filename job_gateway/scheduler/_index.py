"""The free-capacity index behind every decision, kept current one change at a time.

GPUs that take work (ready node, not cordoned) get ids in (node name, index) order. The GPUs
fall into pools: pool 0 (1) is every NVIDIA (AMD) GPU; pools 2 and 3 are the real ones of
each vendor, kept only when the inventory mixes real and simulated GPUs (a request that
needs a real device, ``real_gpu``, draws from them; in an inventory of one kind pools 0
and 1 already are what it may use). A pool of one GPU model inside one of those (``A100``
among the NVIDIA GPUs) is made the first time a request names the model, and kept from
then on like the others. Per pool the index keeps, as sorted lists:

- ``by_free[p]``: (free MiB, gpu id) of every such GPU: the tightest (or emptiest) GPU with
  at least ``need`` free is one bisection away;
- ``kth[p][k]`` for k >= 2: (k-th largest free on the node, node rank) of every node with at
  least k GPUs of that pool: the nodes that can take k GPUs of ``need`` are those whose
  entry is >= ``need``, again one bisection away.

Per node it keeps the CPU (millis) and memory (MiB) free: what the node declares less what
its allocations hold (a node that declares none has no limit). A request fits a GPU when
its node has the CPU and memory too, checked on the candidates the bisections give.

A change to one GPU moves its entry in each of its pools' ``by_free`` and, for its node,
the entries whose k-th largest value changed: O(pools x GPUs per node x log GPUs), memmove
aside.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable

from gridweave_controller.vendors import Vendor
from job_gateway.inventory.models import Gpu, Inventory
from job_gateway.scheduler.allocations import AllocationMap
from job_gateway.scheduler.gpu_models import model_matches

__all__ = [
    "ACCEPTED",
    "REAL",
    "UNLIMITED",
    "VENDOR_CODES",
    "VENDOR_NAMES",
    "WINDOW",
    "CapacityIndex",
]

VENDOR_NAMES = ("nvidia", "amd")
VENDOR_CODES = {"nvidia": 0, "amd": 1}
#: The vendor codes a request's ``vendor`` accepts (never mixed on one request).
ACCEPTED: dict[Vendor, tuple[int, ...]] = {"nvidia": (0,), "amd": (1,), "any": (0, 1)}
#: A vendor's pool of real GPUs is its code + REAL.
REAL = 2
_BASE_POOLS = 2 * REAL
#: How many candidate nodes a multi-GPU binpack decision compares exactly.
WINDOW = 8
#: The CPU or memory of a node that declares none: more than any request may ask.
UNLIMITED = 1 << 62
_FIRST = -1  # sorts before every gpu id and node rank: (need, _FIRST) bisects to "free >= need"
#: Impossibility answers kept per index (the inventory's capacity decides them alone).
_MEMO_LIMIT = 4096


class CapacityIndex:
    """Free VRAM per schedulable GPU, free CPU and memory per node, the sorted views over
    them, and the capacity tables that say what could ever be placed."""

    def __init__(self, inventory: Inventory, allocations: AllocationMap) -> None:
        held = allocations.held_mb
        nodes = sorted(inventory.nodes, key=lambda node: node.name)
        kinds = {gpu.simulated for node in nodes for gpu in node.gpus}
        #: Real and simulated GPUs both: the real ones also sit in pools REAL and REAL + 1.
        self.mixed = len(kinds) == 2
        self.names = [node.name for node in nodes]
        self.rank = {name: rank for rank, name in enumerate(self.names)}
        self.cpu_total = [UNLIMITED if n.cpu_millis is None else n.cpu_millis for n in nodes]
        self.memory_total = [UNLIMITED if n.memory_mb is None else n.memory_mb for n in nodes]
        self.cpu = list(self.cpu_total)
        self.memory = list(self.memory_total)
        for rank, node in enumerate(nodes):
            cpu, memory = allocations.node_held(node.name)
            self.cpu[rank] -= cpu
            self.memory[rank] -= memory
        #: Pool p's vendor code, and for a model pool its base pool and model (else -1, "").
        self.pool_vendor = [0, 1, 0, 1]
        self.pool_base = [-1] * _BASE_POOLS
        self.pool_model = [""] * _BASE_POOLS
        self.gid: dict[tuple[str, int], int] = {}
        self.g_rank: list[int] = []
        self.g_index: list[int] = []
        self.g_model: list[str] = []
        self.g_pools: list[list[int]] = []
        self.g_total: list[int] = []
        self.free: list[int] = []
        self.node_gids: list[list[list[int]]] = []
        self.profile: list[list[list[int]]] = []
        # Every GPU, whatever its state, by base pool: what could ever be placed.
        self.node_all: list[list[list[Gpu]]] = []
        self.node_totals: list[list[list[int]]] = []
        self.largest: list[Gpu | None] = [None] * _BASE_POOLS
        #: The GPU models of each base pool (every GPU, whatever its state), sorted.
        self.pool_models: list[list[str]] = [[] for _ in range(_BASE_POOLS)]
        for rank, node in enumerate(nodes):
            gids: list[list[int]] = [[] for _ in range(_BASE_POOLS)]
            every: list[list[Gpu]] = [[] for _ in range(_BASE_POOLS)]
            for gpu in sorted(node.gpus, key=lambda gpu: gpu.index):
                vendor = VENDOR_CODES[gpu.vendor]
                pools = [vendor, vendor + REAL] if self.mixed and not gpu.simulated else [vendor]
                for pool in pools:
                    every[pool].append(gpu)
                if not (node.ready and gpu.schedulable):
                    continue
                gid = len(self.free)
                self.gid[(node.name, gpu.index)] = gid
                self.g_rank.append(rank)
                self.g_index.append(gpu.index)
                self.g_model.append(gpu.model)
                self.g_pools.append(pools)
                self.g_total.append(gpu.vram_mb)
                self.free.append(gpu.vram_mb - held(node.name, gpu.index))
                for pool in pools:
                    gids[pool].append(gid)
            self.node_gids.append(gids)
            self.node_all.append(every)
            self.profile.append([self._frees_desc(pool_gids) for pool_gids in gids])
            self.node_totals.append([sorted((g.vram_mb for g in e), reverse=True) for e in every])
            for pool, gpus in enumerate(every):
                for gpu in gpus:
                    best = self.largest[pool]
                    if best is None or gpu.vram_mb > best.vram_mb:
                        self.largest[pool] = gpu
        for pool in range(_BASE_POOLS):
            models = {gpu.model for every in self.node_all for gpu in every[pool]}
            self.pool_models[pool] = sorted(models)
        # pool_free[p]: the free VRAM of every GPU of pool p that takes work.
        self.pool_free = [
            sum(self.free[g] for gids in self.node_gids for g in gids[pool])
            for pool in range(_BASE_POOLS)
        ]
        self.by_free = [
            sorted((self.free[g], g) for gids in self.node_gids for g in gids[pool])
            for pool in range(_BASE_POOLS)
        ]
        self.kth: list[list[list[tuple[int, int]]]] = [
            self._kth_lists(pool) for pool in range(_BASE_POOLS)
        ]
        # capacity[p][k]: the largest k-th largest total VRAM of pool p on any node.
        self.capacity: list[list[int]] = [self._capacity(p) for p in range(_BASE_POOLS)]
        self.min_cpu_total = min(self.cpu_total, default=UNLIMITED)
        self.min_memory_total = min(self.memory_total, default=UNLIMITED)
        self._model_pools: dict[tuple[int, str], int] = {}
        self._accepts: dict[tuple[Vendor, bool, tuple[str, ...]], tuple[int, ...]] = {}
        self._possible: dict[tuple[int, int, int, int, tuple[int, ...]], bool] = {}

    # -- pools ------------------------------------------------------------------------------

    def accepts(
        self, vendor: Vendor, real_gpu: bool, models: tuple[str, ...] = ()
    ) -> tuple[int, ...]:
        """The pools a request draws from, in order of preference: those of ``vendor``; only
        the real ones for ``real_gpu``, when the inventory has simulated GPUs too (with none
        real, the simulated: admission decides whether that may be served); for ``models``,
        the pools of each matching model inside those (empty: none matches)."""
        key = (vendor, real_gpu, models)
        found = self._accepts.get(key)
        if found is not None:
            return found
        bases = ACCEPTED[vendor]
        if real_gpu and self.mixed:
            bases = tuple(code + REAL for code in bases)
        if not models:
            found = bases
        else:
            pools: list[int] = []
            for base in bases:
                names = self.pool_models[base]
                matched = [m for m in names if any(model_matches(a, m) for a in models)]
                if len(names) == 1 and matched:
                    pools.append(base)  # the pool already is that one model
                else:
                    pools += [self._model_pool(base, model) for model in matched]
            found = tuple(pools)
        self._accepts[key] = found
        return found

    def models_of(self, vendor: Vendor, real_gpu: bool) -> tuple[str, ...]:
        """Every GPU model of the pools ``vendor`` (and ``real_gpu``) accept."""
        bases = self.accepts(vendor, real_gpu)
        return tuple(sorted({model for base in bases for model in self.pool_models[base]}))

    def _model_pool(self, base: int, model: str) -> int:
        """The pool of ``model``'s GPUs inside ``base``, made on first use."""
        pool = self._model_pools.get((base, model))
        if pool is not None:
            return pool
        pool = len(self.pool_vendor)
        self._model_pools[(base, model)] = pool
        self.pool_vendor.append(self.pool_vendor[base])
        self.pool_base.append(base)
        self.pool_model.append(model)
        largest: Gpu | None = None
        for rank, gids in enumerate(self.node_gids):
            mine = [g for g in gids[base] if self.g_model[g] == model]
            gids.append(mine)
            for g in mine:
                self.g_pools[g].append(pool)
            self.profile[rank].append(self._frees_desc(mine))
            every = [gpu for gpu in self.node_all[rank][base] if gpu.model == model]
            self.node_all[rank].append(every)
            self.node_totals[rank].append(sorted((gpu.vram_mb for gpu in every), reverse=True))
            for gpu in every:
                if largest is None or gpu.vram_mb > largest.vram_mb:
                    largest = gpu
        self.largest.append(largest)
        self.pool_free.append(sum(self.free[g] for gids in self.node_gids for g in gids[pool]))
        self.by_free.append(
            sorted((self.free[g], g) for gids in self.node_gids for g in gids[pool])
        )
        self.kth.append(self._kth_lists(pool))
        self.capacity.append(self._capacity(pool))
        return pool

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

    def possible(
        self, need: int, count: int, accepts: tuple[int, ...], cpu: int = 0, memory: int = 0
    ) -> bool:
        """Some node has ``count`` GPUs of one accepted pool with ``need`` MiB in total, and
        ``cpu`` and ``memory`` in total."""
        capacity = self.capacity
        for pool in accepts:
            if count < len(capacity[pool]) and capacity[pool][count] >= need:
                break
        else:
            return False
        if cpu <= self.min_cpu_total and memory <= self.min_memory_total:
            return True
        key = (need, count, cpu, memory, accepts)
        found = self._possible.get(key)
        if found is None:
            found = any(
                self.cpu_total[rank] >= cpu and self.memory_total[rank] >= memory
                for rank in self._holding_nodes(need, count, accepts)
            )
            if len(self._possible) >= _MEMO_LIMIT:
                self._possible.clear()
            self._possible[key] = found
        return found

    def most(
        self, need: int, count: int, accepts: tuple[int, ...], *, cpu: int = 0
    ) -> tuple[int, int]:
        """(the most CPU, the most memory with ``cpu``) of a node that could ever hold
        ``count`` GPUs of ``need`` of one accepted pool (0, 0: none could)."""
        cpus = [self.cpu_total[rank] for rank in self._holding_nodes(need, count, accepts)]
        memories = [
            self.memory_total[rank]
            for rank in self._holding_nodes(need, count, accepts)
            if self.cpu_total[rank] >= cpu
        ]
        return max(cpus, default=0), max(memories, default=0)

    def _holding_nodes(self, need: int, count: int, accepts: tuple[int, ...]) -> list[int]:
        return [
            rank
            for rank, totals in enumerate(self.node_totals)
            if any(len(totals[p]) >= count and totals[p][count - 1] >= need for p in accepts)
        ]

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

    def fits(self, rank: int, cpu: int, memory: int) -> bool:
        """Node ``rank`` has ``cpu`` and ``memory`` free now."""
        return self.cpu[rank] >= cpu and self.memory[rank] >= memory

    def find(
        self,
        need: int,
        count: int,
        accepts: tuple[int, ...],
        spread: bool,
        cpu: int = 0,
        memory: int = 0,
    ) -> list[int] | None:
        """The GPU ids binpack (tightest) or spread (emptiest) picks now, or None.

        ``accepts`` (pools) is in order of preference: the first pool with room wins. A GPU
        (node) whose node lacks ``cpu`` or ``memory`` is passed over.
        """
        node_cpu, node_memory, g_rank = self.cpu, self.memory, self.g_rank
        if count == 1:
            for pool in accepts:
                entries = self.by_free[pool]
                if not entries or entries[-1][0] < need:
                    continue
                if spread:
                    for i in range(len(entries) - 1, -1, -1):
                        value, g = entries[i]
                        if value < need:
                            break
                        rank = g_rank[g]
                        if node_cpu[rank] >= cpu and node_memory[rank] >= memory:
                            # the emptiest: the first GPU id among the GPUs this free
                            first = bisect_left(entries, (value, _FIRST))
                            for _, g2 in entries[first : i + 1]:
                                r2 = g_rank[g2]
                                if node_cpu[r2] >= cpu and node_memory[r2] >= memory:
                                    return [g2]
                    continue
                for i in range(bisect_left(entries, (need, _FIRST)), len(entries)):
                    g = entries[i][1]
                    rank = g_rank[g]
                    if node_cpu[rank] >= cpu and node_memory[rank] >= memory:
                        return [g]
            return None
        for pool in accepts:
            lists = self.kth[pool]
            if count >= len(lists):
                continue
            entries = lists[count]
            if not entries or entries[-1][0] < need:
                continue
            if spread:
                for i in range(len(entries) - 1, -1, -1):
                    value, rank = entries[i]
                    if value < need:
                        break
                    if node_cpu[rank] >= cpu and node_memory[rank] >= memory:
                        first = bisect_left(entries, (value, _FIRST))
                        for _, r2 in entries[first : i + 1]:
                            if node_cpu[r2] >= cpu and node_memory[r2] >= memory:
                                return self.on_node(r2, pool, need, count, spread=True)
                continue
            # The WINDOW fitting nodes with the smallest k-th largest free VRAM >= need are
            # compared: the one whose chosen GPUs leave the least VRAM free wins (ties: rank).
            best: tuple[int, int] | None = None
            chosen: list[int] = []
            seen = 0
            for i in range(bisect_left(entries, (need, _FIRST)), len(entries)):
                rank = entries[i][1]
                if node_cpu[rank] < cpu or node_memory[rank] < memory:
                    continue
                fits = self.on_node(rank, pool, need, count, spread=False)
                left = sum(self.free[g] for g in fits)
                if best is None or (left, rank) < best:
                    best, chosen = (left, rank), fits
                seen += 1
                if seen == WINDOW:
                    break
            if best is not None:
                return chosen
        return None

    def on_node(self, rank: int, pool: int, need: int, count: int, spread: bool) -> list[int]:
        """The ``count`` GPUs of ``pool`` on node ``rank`` with ``need`` free: the tightest
        (or the emptiest), ties by id."""
        free = self.free
        fits = [g for g in self.node_gids[rank][pool] if free[g] >= need]
        if spread:
            fits.sort(key=lambda g: (-free[g], g))
        else:
            fits.sort(key=lambda g: (free[g], g))
        return fits[:count]

    # -- changes ----------------------------------------------------------------------------

    def take(self, gids: list[int], amount: int, cpu: int = 0, memory: int = 0) -> None:
        """Lower the free VRAM of ``gids`` (one node) by ``amount`` and the node's free CPU
        and memory by ``cpu`` and ``memory`` (any may go below 0; negative gives back)."""
        free = self.free
        touched: set[int] = set()
        for gid in gids:
            self._set(gid, free[gid] - amount)
            touched.update(self.g_pools[gid])
        rank = self.g_rank[gids[0]]
        self.cpu[rank] -= cpu
        self.memory[rank] -= memory
        for pool in touched:
            self._reprofile(rank, pool)

    def refresh(self, gids: Iterable[int], held: Callable[[str, int], int]) -> None:
        """Recompute the free VRAM of ``gids`` from ``held`` (the allocation map)."""
        touched: set[tuple[int, int]] = set()
        names, g_index, g_total, free = self.names, self.g_index, self.g_total, self.free
        for gid in gids:
            rank = self.g_rank[gid]
            value = g_total[gid] - held(names[rank], g_index[gid])
            if value != free[gid]:
                self._set(gid, value)
                touched.update((rank, pool) for pool in self.g_pools[gid])
        for rank, pool in touched:
            self._reprofile(rank, pool)

    def refresh_node(self, rank: int, allocations: AllocationMap) -> None:
        """Recompute node ``rank``'s free CPU and memory from the allocation map."""
        cpu, memory = allocations.node_held(self.names[rank])
        self.cpu[rank] = self.cpu_total[rank] - cpu
        self.memory[rank] = self.memory_total[rank] - memory

    def _set(self, gid: int, value: int) -> None:
        old = self.free[gid]
        for pool in self.g_pools[gid]:
            entries = self.by_free[pool]
            del entries[bisect_left(entries, (old, gid))]
            insort(entries, (value, gid))
            self.pool_free[pool] += value - old
        self.free[gid] = value

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
