"""The fragmentation-aware policy: each placement where expected usable capacity drops least.

A variant of Fragmentation Gradient Descent (Weng et al., USENIX ATC '23). The target
workload M is a few request classes, each a (GPU count, VRAM per GPU, vendor asked) with the
mean CPU and memory of its members and a weight p (its share of the members): the members
are what the allocation map holds now and the requests of the pass (:func:`target_workload`,
at most ``CLASSES`` classes, those of most demand). For a node with free VRAM f_i on its GPUs
of one pool and free CPU C and memory R, class m *fits* when it accepts the pool's vendor,
C >= cpu_m, R >= memory_m and ``count_m`` GPUs have ``need_m`` free; the free VRAM it could
use is S_m = sum of f_i over the GPUs with f_i >= need_m (0 when it does not fit). FGD's
fragmentation of the node is sum_m p_m (T - S_m) with T the node's free VRAM, so

    fragmentation = T - U,   U = sum_m p_m S_m   (the expected usable free VRAM).

A placement takes the same VRAM wherever it goes, so FGD's rule (the least growth of
fragmentation) is: the candidate with the least loss of U. For a single-GPU class S_m
adds up per GPU: U's single-GPU part is sum_i f_i P(f_i), P(f) the weight of the classes
with need <= f that fit the node; on a node with CPU and memory for every class, placing
``need`` on a GPU with f free loses u(f) - u(f - need), u(f) = f P(f): two bisections. Only
a node short of CPU or memory for some class, and the multi-GPU classes, are counted in full
(O(classes x GPUs of the node)); every loss is at least its single-GPU part, so that part is
a bound, and the rest is counted only for candidates that may still win.

Candidates (``choose``), in the first pool the request accepts that has room, in the order
the pass gives (for ``vendor: any`` the vendor with more free VRAM beyond what the waiting
vendor-specific requests want: comparing losses across vendors instead sent such requests
to whichever vendor's GPUs fit tighter, and on a trace whose vendor-specific demand followed
each vendor's capacity the other vendor's multi-GPU jobs then failed): one GPU: the
``BREADTH`` GPUs from the best fit up in ``by_free``, and ``EMPTY_BREADTH`` from the
smallest GPU size above the need (where its empty GPUs sit), on nodes with the CPU and
memory, one per node and free value.
Several GPUs: the ``NODES`` nodes binpack would look at first, each with its tightest GPUs.
Ties go to the placement that leaves the least VRAM free on its GPUs, then to the lowest GPU
id (node rank). Measured against best-fit and first-fit on Alibaba's trace in
docs/benchmarks.md.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from job_gateway.scheduler._index import VENDOR_NAMES, CapacityIndex
from job_gateway.scheduler.types import PlacementRequest

__all__ = [
    "BREADTH",
    "CLASSES",
    "EMPTY_BREADTH",
    "NODES",
    "FragmentationGradient",
    "TargetWorkload",
    "target_workload",
]

#: The most classes the target workload keeps (the most common; the rest weigh nothing).
CLASSES = 16
#: How many fitting GPUs the best fit offers, and the empty GPUs (nodes differ in CPU and
#: memory, and in what multi-GPU classes they fit).
BREADTH = 12
EMPTY_BREADTH = 6
#: How many nodes a multi-GPU request compares (those binpack would look at first).
NODES = 4
_FIRST = -1
#: A multi-GPU class that fits a node: (count, need, cpu, memory, p, usable, GPUs >= need).
_Fit = tuple[int, int, int, int, float, int, int]
#: (loss or a bound below it, VRAM left on its GPUs, tie-break, node, pool, GPU ids, exact).
_Candidate = tuple[float, int, int, int, int, list[int], bool]


@dataclass(frozen=True, slots=True)
class TargetWorkload:
    """The classes one vendor's GPUs are measured against: those that accept the vendor,
    with their weights over every kept class.

    ``single``: (need, cpu, memory, p) of the one-GPU classes by need; ``needs`` and ``cum``
    their needs and the running sums of p (``cum[i]`` = the first i), for nodes with room for
    every class; ``multi``: (count, need, cpu, memory, p) by need; ``cpu`` and ``memory``: the
    most any class asks.
    """

    single: tuple[tuple[int, int, int, float], ...]
    needs: tuple[int, ...]
    cum: tuple[float, ...]
    multi: tuple[tuple[int, int, int, int, float], ...]
    cpu: int
    memory: int


def target_workload(
    held: Mapping[tuple[int, int, str], tuple[int, int, int]],
    requests: Iterable[PlacementRequest],
    *,
    limit: int = CLASSES,
) -> tuple[TargetWorkload, ...]:
    """The workload of ``held`` (the allocation map's shape counts: (GPU count, VRAM per GPU,
    vendor asked) -> (allocations, CPU summed, memory summed)) and the waiting ``requests``,
    as each vendor's GPUs see it (by vendor code: NVIDIA, AMD)."""
    groups = {shape: list(sums) for shape, sums in held.items()}
    for r in requests:
        entry = groups.setdefault((r.gpu_count, r.vram_mb, r.vendor), [0, 0, 0])
        entry[0] += 1
        entry[1] += r.cpu_millis
        entry[2] += r.memory_mb
    kept = sorted(
        groups.items(), key=lambda item: (-item[1][0] * item[0][0] * item[0][1], item[0])
    )[:limit]
    total = sum(sums[0] for _, sums in kept)
    return tuple(_view(kept, total, vendor) for vendor in VENDOR_NAMES)


def _view(
    kept: list[tuple[tuple[int, int, str], list[int]]], total: int, vendor: str
) -> TargetWorkload:
    single: list[tuple[int, int, int, float]] = []
    multi: list[tuple[int, int, int, int, float]] = []
    for (count, need, asked), (members, cpu, memory) in kept:
        if asked not in ("any", vendor):
            continue
        p = members / total
        mean_cpu, mean_memory = cpu // members, memory // members
        if count == 1:
            single.append((need, mean_cpu, mean_memory, p))
        else:
            multi.append((count, need, mean_cpu, mean_memory, p))
    single.sort()
    multi.sort(key=lambda c: (c[1], c[0]))  # by need
    cum = [0.0]
    for _, _, _, p in single:
        cum.append(cum[-1] + p)
    asks = [(c, m) for _, c, m, _ in single] + [(c, m) for _, _, c, m, _ in multi]
    return TargetWorkload(
        single=tuple(single),
        needs=tuple(need for need, _, _, _ in single),
        cum=tuple(cum),
        multi=tuple(multi),
        cpu=max((c for c, _ in asks), default=0),
        memory=max((m for _, m in asks), default=0),
    )


class FragmentationGradient:
    """One pass's chooser: the index as the pass changes it, measured against one workload
    (``workloads``: as each vendor's GPUs see it)."""

    def __init__(self, index: CapacityIndex, workloads: tuple[TargetWorkload, ...]) -> None:
        self.index = index
        self.workloads = workloads
        # Each pool's distinct GPU sizes: where its empty GPUs sit in by_free.
        self._sizes: dict[int, list[int]] = {}
        # (node, pool) -> (its profile, CPU, memory, the multi-GPU classes that fit it then:
        # (count, need, cpu, memory, p, usable VRAM, GPUs with need free)).
        self._fitting: dict[tuple[int, int], tuple[list[int], int, int, list[_Fit]]] = {}
        # (need, vendor) -> f -> u(f) - u(f - need): the workload is the pass's, so they stay.
        self._bounds: dict[tuple[int, int], dict[int, float]] = {}

    def choose(
        self, need: int, count: int, accepts: tuple[int, ...], cpu: int, memory: int
    ) -> list[int] | None:
        """The GPU ids to place on (one node, one pool), or None when nothing fits now."""
        candidates: list[_Candidate] = []
        for pool in accepts:
            if count == 1:
                self._one(candidates, pool, need, cpu, memory)
            else:
                self._several(candidates, pool, need, count, cpu, memory)
            if candidates:
                break  # the first pool with room, as the pass orders them
        return self._least(candidates, need, cpu, memory) if candidates else None

    def _workload(self, pool: int) -> TargetWorkload:
        return self.workloads[self.index.pool_vendor[pool]]

    # -- candidates -------------------------------------------------------------------------

    def _one(
        self, candidates: list[_Candidate], pool: int, need: int, cpu: int, memory: int
    ) -> None:
        index = self.index
        entries = index.by_free[pool]
        if not entries or entries[-1][0] < need:
            return
        node_cpu, node_memory, g_rank = index.cpu, index.memory, index.g_rank
        w = self._workload(pool)
        needs, cum, multi = w.needs, w.cum, w.multi
        roomy_cpu, roomy_memory = w.cpu + cpu, w.memory + memory
        found = len(candidates)
        bounds = self._bounds.setdefault((need, index.pool_vendor[pool]), {})
        plain: set[int] = set()  # free values counted on nodes where only f decides
        scanned = 0  # entries before this were looked at already
        end = len(entries)
        for n, stop in enumerate(self._stops(pool, need)):
            breadth = BREADTH if n == 0 else EMPTY_BREADTH
            offered = 0
            last_value = last_rank = -1
            i = max(bisect_left(entries, (stop, _FIRST)), scanned)
            while i < end and offered < breadth:
                value, g = entries[i]
                i += 1
                rank = g_rank[g]
                if node_cpu[rank] < cpu or node_memory[rank] < memory:
                    continue  # no room on the node
                if value == last_value and rank == last_rank:
                    continue  # a GPU alike the one just offered
                last_value, last_rank = value, rank
                offered += 1
                if node_cpu[rank] < roomy_cpu or node_memory[rank] < roomy_memory:
                    loss = self._loss(rank, pool, [g], need, cpu, memory, ample=False)
                    candidates.append((loss, value - need, g, rank, pool, [g], True))
                    continue
                # Room for every class: u(f) - u(f - need) bounds the loss from below; it is
                # the loss where no multi-GPU class fits the node.
                bound = bounds.get(value)
                if bound is None:
                    bound = value * cum[bisect_right(needs, value)]
                    if value > need:
                        bound -= (value - need) * cum[bisect_right(needs, value - need)]
                    bounds[value] = bound
                if multi:
                    candidates.append((bound, value - need, g, rank, pool, [g], False))
                elif value not in plain:
                    plain.add(value)
                    candidates.append((bound, value - need, g, rank, pool, [g], True))
            scanned = i
            if len(candidates) == found:
                return  # no GPU with room has a node with room: none can be had

    def _stops(self, pool: int, need: int) -> list[int]:
        """Where a one-GPU request's candidates start in ``by_free``: ``need`` (the best
        fit) and the smallest GPU size above it (its empty GPUs)."""
        sizes = self._pool_sizes(pool)
        above = bisect_right(sizes, need)
        return [need] if above == len(sizes) else [need, sizes[above]]

    def _several(
        self,
        candidates: list[_Candidate],
        pool: int,
        need: int,
        count: int,
        cpu: int,
        memory: int,
    ) -> None:
        index = self.index
        lists = index.kth[pool]
        if count >= len(lists):
            return
        entries = lists[count]
        if not entries or entries[-1][0] < need:
            return
        w = self._workload(pool)
        offered = 0
        for i in range(bisect_left(entries, (need, _FIRST)), len(entries)):
            rank = entries[i][1]
            if not index.fits(rank, cpu, memory):
                continue
            gids = index.on_node(rank, pool, need, count, spread=False)
            left = sum(index.free[g] for g in gids) - need * count
            if index.cpu[rank] - cpu >= w.cpu and index.memory[rank] - memory >= w.memory:
                bound = self._single_part(pool, gids, need)
                candidates.append((bound, left, gids[0], rank, pool, gids, not w.multi))
            else:
                loss = self._loss(rank, pool, gids, need, cpu, memory, ample=False)
                candidates.append((loss, left, gids[0], rank, pool, gids, True))
            offered += 1
            if offered == NODES:
                break

    def _least(
        self, candidates: list[_Candidate], need: int, cpu: int, memory: int
    ) -> list[int] | None:
        """The candidate of least loss (ties: least VRAM left on its GPUs, then the lowest
        GPU id); a bound is completed only while it may still win."""
        best: tuple[float, int, int] | None = None
        chosen: list[int] | None = None
        candidates.sort()  # by (bound, left, tie): a GPU id is one pool's candidate once
        for bound, left, tie, rank, pool, gids, exact in candidates:
            if best is not None and (bound, left, tie) >= best:
                break  # every key from here on is at least its bound's
            if not exact:
                bound += self._multi_loss(rank, pool, gids, need, cpu, memory)
            loss = bound
            key = (loss, left, tie)
            if best is None or key < best:
                best, chosen = key, gids
        return chosen

    def _pool_sizes(self, pool: int) -> list[int]:
        sizes = self._sizes.get(pool)
        if sizes is None:
            index = self.index
            sizes = sorted({index.g_total[g] for _, g in index.by_free[pool]})
            self._sizes[pool] = sizes
        return sizes

    # -- the measure ------------------------------------------------------------------------

    def _single_part(self, pool: int, gids: list[int], need: int) -> float:
        """What U's single-GPU part loses on a node with room for every class: the placed
        GPUs' u(f) - u(f - need), u(f) = f P(f)."""
        w, free = self._workload(pool), self.index.free
        needs, cum = w.needs, w.cum
        loss = 0.0
        for g in gids:
            f = free[g]
            loss += f * cum[bisect_right(needs, f)]
            if f > need:
                loss -= (f - need) * cum[bisect_right(needs, f - need)]
        return loss

    def _loss(
        self,
        rank: int,
        pool: int,
        gids: list[int],
        need: int,
        cpu: int,
        memory: int,
        *,
        ample: bool,
    ) -> float:
        """U before the placement less U after it, on node ``rank``'s GPUs of ``pool``."""
        index, w = self.index, self._workload(pool)
        free = index.free
        if ample:  # every class fits the node's CPU and memory before and after
            loss = self._single_part(pool, gids, need)
        else:
            mine = index.node_gids[rank][pool]
            chosen = set(gids)
            before = [free[g] for g in mine]
            after = [free[g] - need if g in chosen else free[g] for g in mine]
            c0, m0 = index.cpu[rank], index.memory[rank]
            loss = self._single(w, before, c0, m0) - self._single(w, after, c0 - cpu, m0 - memory)
        if w.multi:
            loss += self._multi_loss(rank, pool, gids, need, cpu, memory)
        return loss

    @staticmethod
    def _single(w: TargetWorkload, frees: list[int], cpu: int, memory: int) -> float:
        """U's single-GPU part: the classes that fit the node's CPU and memory."""
        usable = 0.0
        for need, c, m, p in w.single:
            if c <= cpu and m <= memory:
                usable += p * sum(f for f in frees if f >= need)
        return usable

    def _fits(self, rank: int, pool: int) -> list[_Fit]:
        """The multi-GPU classes that fit node ``rank``'s GPUs of ``pool`` now (cached while
        the node's free VRAM, CPU and memory stay as they are)."""
        index = self.index
        profile = index.profile[rank][pool]  # the node's free VRAM, largest first
        cpu, memory = index.cpu[rank], index.memory[rank]
        cached = self._fitting.get((rank, pool))
        if cached is not None and cached[0] is profile and cached[1] == cpu and cached[2] == memory:
            return cached[3]
        fits: list[_Fit] = []
        for count, need, c, m, p in self._workload(pool).multi:
            if c > cpu or m > memory or len(profile) < count or profile[count - 1] < need:
                continue
            usable = at_least = 0
            for f in profile:
                if f < need:
                    break
                usable += f
                at_least += 1
            fits.append((count, need, c, m, p, usable, at_least))
        self._fitting[(rank, pool)] = (profile, cpu, memory, fits)
        return fits

    def _multi_loss(
        self, rank: int, pool: int, gids: list[int], need: int, cpu: int, memory: int
    ) -> float:
        """What U's multi-GPU part loses: only the classes that fit the node before count."""
        fits = self._fits(rank, pool)
        if not fits:
            return 0.0
        index, w = self.index, self._workload(pool)
        cpu_after, memory_after = index.cpu[rank] - cpu, index.memory[rank] - memory
        roomy = cpu_after >= w.cpu and memory_after >= w.memory
        loss = 0.0
        if len(gids) == 1 and roomy:  # the common case, kept short
            f = index.free[gids[0]]
            for count, n, _, _, p, usable, at_least in fits:
                if n > f:
                    break  # the fits are in order of need: the rest lose nothing
                if f - need >= n:
                    loss += p * need
                elif at_least > count:
                    loss += p * f
                else:
                    loss += p * usable
            return loss
        changed = [index.free[g] for g in gids]
        for count, n, c, m, p, usable, at_least in fits:
            lost = dropped = 0
            for f in changed:
                if f >= n:
                    if f - need >= n:
                        lost += need
                    else:
                        lost += f
                        dropped += 1
            still = c <= cpu_after and m <= memory_after and at_least - dropped >= count
            loss += p * (lost if still else usable)
        return loss
