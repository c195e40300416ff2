"""Pausing CPython's cyclic garbage collector while the gateway rebuilds its state.

The informers' first lists decode every GridweaveJob and GridweaveEndpoint and hand each to
the allocation map: about 200 container objects per job, two million for 10,000 jobs,
none of them in a reference cycle. The cyclic collector, triggered by allocation counts,
would traverse the growing heap again and again while they are built: two thirds of a
10,000-job start's CPU (docs/benchmarks.md). Paused, reference counting still frees
everything the start discards. When the gateway is synced, what exists is frozen
(``gc.freeze``: moved to the collector's permanent generation, as one does before forking
workers) and the collector resumes: otherwise its first full collection would traverse
the whole rebuilt cache at once (0.7 s of a profiled start). Frozen objects are still
freed by reference counting when the informer replaces them. Garbage cycles are collected
before the pause (the heap is small then), so only a cycle made during the pause and
dropped later could stay uncollected.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block, then freeze what exists and resume it."""
    running = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if running:
            gc.enable()
