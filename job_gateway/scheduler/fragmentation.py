"""Fragmentation: free VRAM the typical waiting request cannot use.

For one request r (``vram_mb`` = need, ``gpu_count`` = k, vendor), a GPU's free VRAM is
*usable* when r could be placed now on a set of GPUs that includes it: the GPU is of a
vendor r accepts, has at least ``need`` free, and its node (ready) has at least k GPUs of
that vendor with at least ``need`` free each. Everything else free is *unusable by r*.
Fragmentation is the mean, over the waiting requests that are possible (each counted once),
of the free VRAM unusable by that request: ``free_mb`` where nothing waits is 0 unusable.
The remainder left on a usable GPU (10 GiB free, 4 GiB asked: 2 GiB left after two
placements) is not counted: the rule is about GPUs and nodes, not about division.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable
from itertools import accumulate

from job_gateway.scheduler._index import CapacityIndex
from job_gateway.scheduler.types import Fragmentation, PlacementRequest

__all__ = ["measure_fragmentation"]


def measure_fragmentation(
    index: CapacityIndex, requests: Iterable[PlacementRequest]
) -> Fragmentation:
    """The fragmentation of the index's free VRAM for these waiting requests."""
    free_mb = sum(value for value in index.free if value > 0)
    shapes: Counter[tuple[int, int, tuple[int, ...]]] = Counter()
    for request in requests:
        accepts = index.accepts(request.vendor, request.real_gpu, request.gpu_models)
        if index.possible(
            request.vram_mb, request.gpu_count, accepts, request.cpu_millis, request.memory_mb
        ):
            shapes[(request.vram_mb, request.gpu_count, accepts)] += 1
    if not shapes:
        return Fragmentation(free_mb=free_mb, unusable_mb=0.0, requests=0)
    # suffix[v][i]: the free VRAM of by_free[v][i:] (every one >= need once i is bisected).
    suffix = [
        list(accumulate(reversed([max(value, 0) for value, _ in entries]), initial=0))[::-1]
        for entries in index.by_free
    ]
    unusable = 0.0
    counted = 0
    for (need, count, accepts), times in shapes.items():
        usable = 0
        if count == 1:
            for vendor in accepts:
                usable += suffix[vendor][bisect_left(index.by_free[vendor], (need, -1))]
        else:
            for profiles in index.profile:
                for vendor in accepts:
                    fitting = [value for value in profiles[vendor] if value >= need]
                    if len(fitting) >= count:
                        usable += sum(fitting)
        unusable += times * (free_mb - usable)
        counted += times
    return Fragmentation(free_mb=free_mb, unusable_mb=unusable / counted, requests=counted)
