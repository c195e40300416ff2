"""Fair share between users: weighted dominant-resource fairness decides who is tried first.

A user's dominant share is the largest of the fractions of the cluster's VRAM (over the GPUs
that take work, VRAM x GPUs), CPU and memory (over the ready nodes that declare them) that
the user's allocations hold, divided by the user's weight (1 unless an admin set another).
Within one priority class a pass tries the user with the lowest share first, that user's
oldest request first; a placement raises the user's share at once, so one pass interleaves
users the way DRF does (Ghodsi et al., NSDI '11). Ties go to the older head request. When the
cluster has room every request is placed anyway; the order decides only who gets the last
room, which is what "when full" means. A request that does not fit is passed over (backfill)
without changing its user's share.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence

from job_gateway.scheduler.types import PlacementRequest

__all__ = ["FairOrder", "RankKey", "Totals", "check_weights"]

#: The cluster's (VRAM MiB x GPUs, CPU millis, memory MiB) that shares are fractions of.
Totals = tuple[int, int, int]
RankKey = Callable[[PlacementRequest], tuple[int, float, str, str]]


def check_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """A copy of ``weights``; ValueError naming a user whose weight is not above 0."""
    for user, weight in weights.items():
        if not weight > 0:
            raise ValueError(f"user {user!r}: a share's weight must be above 0, not {weight}")
    return dict(weights)


class FairOrder:
    """The order of one priority class's requests in one pass; call :meth:`charge` with each
    request placed before asking for the next."""

    def __init__(
        self,
        requests: Sequence[PlacementRequest],
        *,
        totals: Totals,
        held: Callable[[str], tuple[int, int, int]],
        weights: Mapping[str, float],
        rank_key: RankKey,
    ) -> None:
        self._totals = totals
        self._weights = weights
        self._rank_key = rank_key
        queues: dict[str, list[PlacementRequest]] = defaultdict(list)
        for request in requests:
            queues[request.user].append(request)
        self._queues = {user: deque(sorted(q, key=rank_key)) for user, q in queues.items()}
        self._usage = held
        self._held = {user: list(held(user)) for user in self._queues}
        self._heap = [
            (self.share(user), rank_key(queue[0]), user) for user, queue in self._queues.items()
        ]
        heapq.heapify(self._heap)

    def share(self, user: str) -> float:
        """``user``'s dominant share now (this pass's placements included), over its weight."""
        held = self._held[user]
        fractions = (h / t for h, t in zip(held, self._totals, strict=True) if t > 0)
        return max(fractions, default=0.0) / self._weights.get(user, 1.0)

    def charge(self, request: PlacementRequest) -> None:
        """``request`` was placed: its user now holds what it asked."""
        held = self._held.get(request.user)
        if held is None:
            held = self._held[request.user] = list(self._usage(request.user))
        held[0] += request.vram_mb * request.gpu_count
        held[1] += request.cpu_millis
        held[2] += request.memory_mb

    def __iter__(self) -> Iterator[PlacementRequest]:
        heap, queues = self._heap, self._queues
        if len(queues) == 1:  # one user: its own order
            (queue,) = queues.values()
            while queue:
                yield queue.popleft()
            return
        while heap:
            _, _, user = heapq.heappop(heap)
            queue = queues[user]
            yield queue.popleft()
            if queue:
                heapq.heappush(heap, (self.share(user), self._rank_key(queue[0]), user))
