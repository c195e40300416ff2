"""The allocation map: which object holds how much VRAM on which GPU, kept incrementally.

The gateway derives it from the GridweaveJob and GridweaveEndpoint objects its informer
follows: every add/update event goes to :meth:`AllocationMap.apply_job` (or
``apply_endpoint``), every delete to :meth:`AllocationMap.remove`. Each call costs
O(GPUs of that object); nothing is rebuilt per decision.

Holding rules: a job holds VRAM while Allocated or Running, an endpoint while Deploying or
Running, in both cases only with ``status.node`` and ``status.gpuIndices`` set. An endpoint
holds ``vramMb`` x ``maxReplicas`` on each GPU: every replica Serve may start runs on its
one placement, so the map never counts less than Serve may use. A
provisional hold (a placement put here before its status write is seen) survives an event
that still shows the object waiting (Pending), and goes when the object holds for real,
reaches any other phase, is removed, or the gateway calls :meth:`AllocationMap.remove` after
a failed write.

Invariant: ``held_mb(node, index)`` is the sum of ``vram_mb`` over the allocations naming
that GPU (and ``endpoint_held_mb`` the endpoints' part). Not thread-safe: one loop owns it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from gridweave_controller.models import Endpoint, Job
from gridweave_controller.phases import EndpointPhase, JobPhase
from job_gateway.scheduler.types import Allocation, AllocationKey, endpoint_vram_mb

__all__ = [
    "ENDPOINT_HOLDING_PHASES",
    "JOB_HOLDING_PHASES",
    "AllocationMap",
    "ChangeListener",
    "endpoint_allocation",
    "job_allocation",
]

JOB_HOLDING_PHASES = frozenset({JobPhase.ALLOCATED, JobPhase.RUNNING})
ENDPOINT_HOLDING_PHASES = frozenset({EndpointPhase.DEPLOYING, EndpointPhase.RUNNING})
#: Called with (node, GPU indices) whenever what those GPUs hold changes.
ChangeListener = Callable[[str, tuple[int, ...]], None]


def job_allocation(job: Job) -> Allocation | None:
    """What ``job`` holds now, or None."""
    status = job.status
    if status.phase not in JOB_HOLDING_PHASES or not status.node or not status.gpu_indices:
        return None
    return Allocation("job", job.name, status.node, status.gpu_indices, job.spec.vram_mb)


def endpoint_allocation(endpoint: Endpoint) -> Allocation | None:
    """What ``endpoint`` holds now (``maxReplicas`` replicas' VRAM on each GPU), or None."""
    status, spec = endpoint.status, endpoint.spec
    if status.phase not in ENDPOINT_HOLDING_PHASES or not status.node or not status.gpu_indices:
        return None
    held = endpoint_vram_mb(spec.vram_mb, spec.max_replicas)
    return Allocation("endpoint", endpoint.name, status.node, status.gpu_indices, held)


class AllocationMap:
    """Allocations by (kind, name), with the VRAM held on each GPU."""

    def __init__(self) -> None:
        self._by_key: dict[AllocationKey, Allocation] = {}
        self._held: dict[tuple[str, int], int] = {}
        self._endpoint_held: dict[tuple[str, int], int] = {}
        self._listeners: list[ChangeListener] = []

    @classmethod
    def from_objects(
        cls, jobs: Iterable[Job] = (), endpoints: Iterable[Endpoint] = ()
    ) -> AllocationMap:
        """The map of a listing (rehydration), built one object at a time."""
        allocations = cls()
        for job in jobs:
            allocations.apply_job(job)
        for endpoint in endpoints:
            allocations.apply_endpoint(endpoint)
        return allocations

    # -- informer events --------------------------------------------------------------------

    def apply_job(self, job: Job) -> bool:
        """Follow an added or updated job; True when what it holds changed."""
        allocation = job_allocation(job)
        if allocation is not None:
            return self.put(allocation)
        key: AllocationKey = ("job", job.name)
        if job.phase is JobPhase.PENDING and self._is_provisional(key):
            return False  # our status write is not seen yet
        return self.remove(key)

    def apply_endpoint(self, endpoint: Endpoint) -> bool:
        """Follow an added or updated endpoint; True when what it holds changed."""
        allocation = endpoint_allocation(endpoint)
        if allocation is not None:
            return self.put(allocation)
        key: AllocationKey = ("endpoint", endpoint.name)
        if endpoint.phase is EndpointPhase.PENDING and self._is_provisional(key):
            return False
        return self.remove(key)

    # -- direct edits -----------------------------------------------------------------------

    def put(self, allocation: Allocation) -> bool:
        """Hold ``allocation`` in place of the key's previous one; True when it changed."""
        key = allocation.key
        old = self._by_key.get(key)
        if old == allocation:
            return False
        if old is not None:
            self._add(old, -1)
        self._by_key[key] = allocation
        self._add(allocation, 1)
        if old is None:
            self._notify(allocation.node, allocation.gpu_indices)
        elif old.node == allocation.node:
            both = tuple(sorted(set(old.gpu_indices) | set(allocation.gpu_indices)))
            self._notify(allocation.node, both)
        else:
            self._notify(old.node, old.gpu_indices)
            self._notify(allocation.node, allocation.gpu_indices)
        return True

    def remove(self, key: AllocationKey) -> bool:
        """Release what ``key`` holds (a deleted object, a failed write); True if it held."""
        old = self._by_key.pop(key, None)
        if old is None:
            return False
        self._add(old, -1)
        self._notify(old.node, old.gpu_indices)
        return True

    # -- reads ------------------------------------------------------------------------------

    def held_mb(self, node: str, index: int) -> int:
        """VRAM held on that GPU by every allocation, MiB."""
        return self._held.get((node, index), 0)

    def endpoint_held_mb(self, node: str, index: int) -> int:
        """VRAM held on that GPU by endpoints (which run until stopped), MiB."""
        return self._endpoint_held.get((node, index), 0)

    def get(self, key: AllocationKey) -> Allocation | None:
        """The allocation of ``key``, if it holds."""
        return self._by_key.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __iter__(self) -> Iterator[Allocation]:
        return iter(list(self._by_key.values()))

    def __len__(self) -> int:
        return len(self._by_key)

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` on every change; returns the function that unsubscribes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    # -- internals --------------------------------------------------------------------------

    def _is_provisional(self, key: AllocationKey) -> bool:
        current = self._by_key.get(key)
        return current is not None and current.provisional

    def _add(self, allocation: Allocation, sign: int) -> None:
        amount = sign * allocation.vram_mb
        node = allocation.node
        for index in allocation.gpu_indices:
            gpu = (node, index)
            held = self._held.get(gpu, 0) + amount
            if held:
                self._held[gpu] = held
            else:
                self._held.pop(gpu, None)
            if allocation.kind == "endpoint":
                endpoint_held = self._endpoint_held.get(gpu, 0) + amount
                if endpoint_held:
                    self._endpoint_held[gpu] = endpoint_held
                else:
                    self._endpoint_held.pop(gpu, None)

    def _notify(self, node: str, indices: tuple[int, ...]) -> None:
        for listener in self._listeners:
            listener(node, indices)
