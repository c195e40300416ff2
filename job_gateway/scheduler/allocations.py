"""The allocation map: which object holds how much VRAM on which GPU, kept incrementally.

It also counts, as each allocation comes and goes, the CPU and memory held on each node,
what each user holds (fair share), and how many allocations of each shape there are (the
workload the fragmentation-aware policy measures against).

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
that GPU (and ``endpoint_held_mb`` the endpoints' part); ``node_held(node)`` the sum of their
``cpu_millis`` and ``memory_mb`` over the allocations on that node; ``user_held(user)`` the
sums of ``vram_mb x GPUs``, ``cpu_millis`` and ``memory_mb`` over that user's allocations;
``shape_counts()`` per (GPU count, VRAM per GPU, vendor asked) the number of allocations and
the sums of their CPU and memory. A job or endpoint that names no CPU or memory holds the map's
``default_slice`` per GPU. Not thread-safe: one loop owns it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import TypeVar

from gridweave_controller.models import Endpoint, Job
from gridweave_controller.phases import EndpointPhase, JobPhase
from job_gateway.scheduler.types import (
    NO_DEFAULT_SLICE,
    Allocation,
    AllocationKey,
    DefaultSlice,
    endpoint_resource,
    endpoint_vram_mb,
)

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
_K = TypeVar("_K", bound=Hashable)

#: Called with (node, GPU indices) whenever what those GPUs (and their node) hold changes.
ChangeListener = Callable[[str, tuple[int, ...]], None]


def job_allocation(job: Job, default_slice: DefaultSlice = NO_DEFAULT_SLICE) -> Allocation | None:
    """What ``job`` holds now, or None."""
    status, spec = job.status, job.spec
    if status.phase not in JOB_HOLDING_PHASES or not status.node or not status.gpu_indices:
        return None
    return Allocation(
        "job",
        job.name,
        status.node,
        status.gpu_indices,
        spec.vram_mb,
        cpu_millis=default_slice.cpu_millis(spec.cpu_millis, spec.gpu_count),
        memory_mb=default_slice.memory_mb(spec.memory_mb, spec.gpu_count),
        user=spec.user_id,
        vendor=spec.vendor,
    )


def endpoint_allocation(
    endpoint: Endpoint, default_slice: DefaultSlice = NO_DEFAULT_SLICE
) -> Allocation | None:
    """What ``endpoint`` holds now (``maxReplicas`` replicas' VRAM on each GPU, and their CPU
    and memory), or None."""
    status, spec = endpoint.status, endpoint.spec
    if status.phase not in ENDPOINT_HOLDING_PHASES or not status.node or not status.gpu_indices:
        return None
    held = endpoint_vram_mb(spec.vram_mb, spec.max_replicas)
    cpu = default_slice.cpu_millis(spec.cpu_millis, spec.gpu_count)
    memory = default_slice.memory_mb(spec.memory_mb, spec.gpu_count)
    return Allocation(
        "endpoint",
        endpoint.name,
        status.node,
        status.gpu_indices,
        held,
        cpu_millis=endpoint_resource(cpu, spec.max_replicas),
        memory_mb=endpoint_resource(memory, spec.max_replicas),
        user=spec.user_id,
        vendor=spec.vendor,
    )


class AllocationMap:
    """Allocations by (kind, name), with the VRAM held on each GPU and the CPU and memory
    held on each node."""

    def __init__(self, *, default_slice: DefaultSlice = NO_DEFAULT_SLICE) -> None:
        self.default_slice = default_slice
        self._by_key: dict[AllocationKey, Allocation] = {}
        self._held: dict[tuple[str, int], int] = {}
        self._endpoint_held: dict[tuple[str, int], int] = {}
        #: node -> [CPU millis, memory MiB] held there (and by endpoints alone).
        self._node_held: dict[str, list[int]] = {}
        self._node_endpoint_held: dict[str, list[int]] = {}
        #: user -> [VRAM x GPUs, CPU millis, memory MiB] held.
        self._user_held: dict[str, list[int]] = {}
        #: (GPU count, VRAM per GPU, vendor asked) -> [allocations, CPU millis summed,
        #: memory MiB summed].
        self._shapes: dict[tuple[int, int, str], list[int]] = {}
        self._listeners: list[ChangeListener] = []

    @classmethod
    def from_objects(
        cls,
        jobs: Iterable[Job] = (),
        endpoints: Iterable[Endpoint] = (),
        *,
        default_slice: DefaultSlice = NO_DEFAULT_SLICE,
    ) -> AllocationMap:
        """The map of a listing (rehydration), built one object at a time."""
        allocations = cls(default_slice=default_slice)
        for job in jobs:
            allocations.apply_job(job)
        for endpoint in endpoints:
            allocations.apply_endpoint(endpoint)
        return allocations

    # -- informer events --------------------------------------------------------------------

    def apply_job(self, job: Job) -> bool:
        """Follow an added or updated job; True when what it holds changed."""
        allocation = job_allocation(job, self.default_slice)
        if allocation is not None:
            return self.put(allocation)
        key: AllocationKey = ("job", job.name)
        if job.phase is JobPhase.PENDING and self._is_provisional(key):
            return False  # our status write is not seen yet
        return self.remove(key)

    def apply_endpoint(self, endpoint: Endpoint) -> bool:
        """Follow an added or updated endpoint; True when what it holds changed."""
        allocation = endpoint_allocation(endpoint, self.default_slice)
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

    def node_held(self, node: str) -> tuple[int, int]:
        """(CPU millis, memory MiB) held on ``node`` by every allocation."""
        held = self._node_held.get(node)
        return (0, 0) if held is None else (held[0], held[1])

    def endpoint_node_held(self, node: str) -> tuple[int, int]:
        """(CPU millis, memory MiB) held on ``node`` by endpoints (which run until stopped)."""
        held = self._node_endpoint_held.get(node)
        return (0, 0) if held is None else (held[0], held[1])

    def user_held(self, user: str) -> tuple[int, int, int]:
        """(VRAM MiB x GPUs, CPU millis, memory MiB) ``user``'s allocations hold."""
        held = self._user_held.get(user)
        return (0, 0, 0) if held is None else (held[0], held[1], held[2])

    def shape_counts(self) -> dict[tuple[int, int, str], tuple[int, int, int]]:
        """(GPU count, VRAM per GPU, vendor asked) -> (allocations, CPU millis summed, memory
        MiB summed)."""
        return {shape: (e[0], e[1], e[2]) for shape, e in self._shapes.items()}

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
        cpu, memory = sign * allocation.cpu_millis, sign * allocation.memory_mb
        gpus = len(allocation.gpu_indices)
        _count(self._node_held, node, (cpu, memory))
        if allocation.kind == "endpoint":
            _count(self._node_endpoint_held, node, (cpu, memory))
        _count(self._user_held, allocation.user, (amount * gpus, cpu, memory))
        shape = (gpus, allocation.vram_mb, allocation.vendor)
        _count(self._shapes, shape, (sign, cpu, memory))
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


def _count(table: dict[_K, list[int]], key: _K, amounts: tuple[int, ...]) -> None:
    """Add ``amounts`` to ``table[key]``, dropping the entry once every amount is 0."""
    entry = table.get(key)
    if entry is None:
        table[key] = list(amounts)
        return
    for i, amount in enumerate(amounts):
        entry[i] += amount
    if not any(entry):
        del table[key]
