"""The scheduler's values: requests, allocations, placements, reservations and reports.

Every value is immutable. VRAM is in MiB per GPU, the unit of ``spec.vramMb``; CPU in
thousandths of a core and memory in MiB of the node, for the whole request (``spec.cpuMillis``,
``spec.memoryMb``). Times are seconds on one clock (the gateway uses epoch seconds:
``metadata.creationTimestamp``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from gridweave_controller.models import Endpoint, Job
from gridweave_controller.vendors import VENDORS, Vendor
from job_gateway.inventory.models import Gpu

__all__ = [
    "NO_DEFAULT_SLICE",
    "Allocation",
    "AllocationKey",
    "Decision",
    "DefaultSlice",
    "Fragmentation",
    "Impossible",
    "ImpossibleField",
    "Kind",
    "Placement",
    "PlacementRequest",
    "Policy",
    "REAL_GPU_BUSY",
    "Reservation",
    "POLICIES",
    "Shape",
    "Unplaced",
    "endpoint_resource",
    "endpoint_vram_mb",
]

#: What holds VRAM: a GridweaveJob or a GridweaveEndpoint.
Kind = Literal["job", "endpoint"]
#: fgd: least growth of fragmentation (default); binpack: the tightest GPUs that fit;
#: spread: the emptiest (docs/architecture.md, "The placement rule").
Policy = Literal["fgd", "binpack", "spread"]
POLICIES: tuple[Policy, ...] = ("fgd", "binpack", "spread")
#: An object's identity in the allocation map and in a decision: (kind, name).
AllocationKey = tuple[Kind, str]


@dataclass(frozen=True, slots=True)
class Shape:
    """What one request asks of one node: ``vram_mb`` on each of ``gpu_count`` GPUs, and
    ``cpu_millis`` and ``memory_mb`` of the node in all."""

    vram_mb: int
    gpu_count: int = 1
    cpu_millis: int = 0
    memory_mb: int = 0


@dataclass(frozen=True, slots=True)
class DefaultSlice:
    """What work that names no CPU or memory is counted for, per GPU it asks: the node's
    default container limits (the sandbox's), so the scheduler never counts it as free."""

    cpu_millis_per_gpu: int = 0
    memory_mb_per_gpu: int = 0

    def cpu_millis(self, asked: int | None, gpus: int) -> int:
        """``asked``, else the default for ``gpus`` GPUs."""
        return self.cpu_millis_per_gpu * gpus if asked is None else asked

    def memory_mb(self, asked: int | None, gpus: int) -> int:
        """``asked``, else the default for ``gpus`` GPUs."""
        return self.memory_mb_per_gpu * gpus if asked is None else asked


#: Work that names no CPU or memory counts none.
NO_DEFAULT_SLICE = DefaultSlice()


@dataclass(frozen=True, slots=True)
class Allocation:
    """What one object holds: ``vram_mb`` on each of ``gpu_indices`` of ``node``, and
    ``cpu_millis`` and ``memory_mb`` of that node; ``user`` is whose it is (fair share).

    ``provisional``: placed by the gateway, its status write not yet seen by the informer;
    an update that still shows the object unplaced leaves it held (see AllocationMap).
    """

    kind: Kind
    name: str
    node: str
    gpu_indices: tuple[int, ...]
    vram_mb: int
    provisional: bool = False
    cpu_millis: int = 0
    memory_mb: int = 0
    user: str = ""
    #: The vendor the object asked for (``any``: either): the workload fgd measures against.
    vendor: Vendor = "any"

    def __post_init__(self) -> None:
        if len(set(self.gpu_indices)) != len(self.gpu_indices):
            raise ValueError(f"{self.kind} {self.name}: GPU indices repeat: {self.gpu_indices}")

    @property
    def key(self) -> AllocationKey:
        """(kind, name)."""
        return (self.kind, self.name)

    @property
    def shape(self) -> Shape:
        """What it holds, as a request would ask it."""
        return Shape(self.vram_mb, len(self.gpu_indices), self.cpu_millis, self.memory_mb)


def endpoint_vram_mb(vram_mb: int, max_replicas: int) -> int:
    """VRAM an endpoint holds on each of its GPUs: ``vram_mb`` for every replica Serve may
    start (all replicas run on the endpoint's one placement, each with its own share)."""
    return vram_mb * max(1, max_replicas)


def endpoint_resource(per_replica: int, max_replicas: int) -> int:
    """CPU or memory an endpoint holds on its node: a replica's for every replica Serve may
    start, as its VRAM."""
    return per_replica * max(1, max_replicas)


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """A job or endpoint waiting for ``gpu_count`` GPUs with ``vram_mb`` free on each, on a
    node with ``cpu_millis`` and ``memory_mb`` free.

    ``real_gpu``: only GPUs with a real device behind them will do (a ``vllm`` endpoint),
    whenever the inventory has any; in one of simulated GPUs only, those (admission has let
    it in only where vLLM's CPU build serves, ``GATEWAY_VLLM_ALLOW_CPU``). ``gpu_models``:
    the GPU models that will do (any of them, matched by ``gpu_models.model_matches``;
    empty: any model); its GPUs are all of one model. ``user``: whose request it is (fair
    share orders users; see scheduler.py).
    """

    name: str
    vram_mb: int
    gpu_count: int = 1
    vendor: Vendor = "any"
    priority: int = 0
    submitted_at: float = 0.0
    kind: Kind = "job"
    real_gpu: bool = False
    cpu_millis: int = 0
    memory_mb: int = 0
    gpu_models: tuple[str, ...] = ()
    user: str = ""

    def __post_init__(self) -> None:
        if self.vram_mb < 1:
            raise ValueError(f"{self.name}: vram_mb must be at least 1, not {self.vram_mb}")
        if self.gpu_count < 1:
            raise ValueError(f"{self.name}: gpu_count must be at least 1, not {self.gpu_count}")
        if self.vendor not in VENDORS:
            raise ValueError(f"{self.name}: unknown vendor {self.vendor!r}")
        if self.cpu_millis < 0 or self.memory_mb < 0:
            raise ValueError(f"{self.name}: cpu_millis and memory_mb must not be negative")
        if any(not model.strip() for model in self.gpu_models):
            raise ValueError(f"{self.name}: a GPU model must not be empty")

    @property
    def key(self) -> AllocationKey:
        """(kind, name)."""
        return (self.kind, self.name)

    @property
    def shape(self) -> Shape:
        """What it asks of one node."""
        return Shape(self.vram_mb, self.gpu_count, self.cpu_millis, self.memory_mb)

    @classmethod
    def from_job(
        cls,
        job: Job,
        *,
        priority: int | None = None,
        default_slice: DefaultSlice = NO_DEFAULT_SLICE,
    ) -> PlacementRequest:
        """The request of a Pending GridweaveJob (submitted at its creation time).

        ``priority`` defaults to the job's ``spec.priority``; CPU and memory the job does not
        name are ``default_slice``'s.
        """
        created = job.metadata.creation_timestamp
        spec = job.spec
        return cls(
            name=job.name,
            vram_mb=spec.vram_mb,
            gpu_count=spec.gpu_count,
            vendor=spec.vendor,
            priority=spec.priority if priority is None else priority,
            submitted_at=created.timestamp() if created else 0.0,
            cpu_millis=default_slice.cpu_millis(spec.cpu_millis, spec.gpu_count),
            memory_mb=default_slice.memory_mb(spec.memory_mb, spec.gpu_count),
            gpu_models=spec.gpu_models or (),
            user=spec.user_id,
        )

    @classmethod
    def from_endpoint(
        cls,
        endpoint: Endpoint,
        *,
        priority: int = 0,
        default_slice: DefaultSlice = NO_DEFAULT_SLICE,
    ) -> PlacementRequest:
        """The request of a GridweaveEndpoint waiting to be deployed: room on each GPU for
        ``maxReplicas`` replicas (VRAM, CPU and memory), on real GPUs for mode ``vllm``."""
        created = endpoint.metadata.creation_timestamp
        spec = endpoint.spec
        return cls(
            name=endpoint.name,
            vram_mb=endpoint_vram_mb(spec.vram_mb, spec.max_replicas),
            gpu_count=spec.gpu_count,
            vendor=spec.vendor,
            priority=priority,
            submitted_at=created.timestamp() if created else 0.0,
            kind="endpoint",
            real_gpu=spec.mode == "vllm",
            cpu_millis=endpoint_resource(
                default_slice.cpu_millis(spec.cpu_millis, spec.gpu_count), spec.max_replicas
            ),
            memory_mb=endpoint_resource(
                default_slice.memory_mb(spec.memory_mb, spec.gpu_count), spec.max_replicas
            ),
            gpu_models=spec.gpu_models or (),
            user=spec.user_id,
        )


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a request goes: ``node`` and exactly these GPU indices (ascending)."""

    request: PlacementRequest
    node: str
    gpu_indices: tuple[int, ...]

    @property
    def key(self) -> AllocationKey:
        """The request's (kind, name)."""
        return self.request.key

    def allocation(self, *, provisional: bool = True) -> Allocation:
        """The hold this placement makes, to put in the allocation map before writing it."""
        request = self.request
        return Allocation(
            kind=request.kind,
            name=request.name,
            node=self.node,
            gpu_indices=self.gpu_indices,
            vram_mb=request.vram_mb,
            provisional=provisional,
            cpu_millis=request.cpu_millis,
            memory_mb=request.memory_mb,
            user=request.user,
            vendor=request.vendor,
        )


@dataclass(frozen=True, slots=True)
class Reservation:
    """GPUs an aged request waits for: lower-ranked work may use only what it leaves."""

    key: AllocationKey
    node: str
    gpu_indices: tuple[int, ...]


#: What made a request impossible: the request field an API names in its 422.
ImpossibleField = Literal["vendor", "gpu_models", "vram_mb", "gpu_count", "cpu_millis", "memory_mb"]


@dataclass(frozen=True, slots=True)
class Impossible:
    """A request no node of the inventory can ever hold (the API answers 422 with ``message``).

    ``largest_gpu``: the largest GPU of a vendor (and model) the request accepts (None:
    there is none); ``most_gpus``: the most such GPUs with at least ``vram_mb`` on one node;
    ``real_only``: only the real GPUs counted (the request needs one, and the inventory
    has simulated GPUs beside them). ``short_of`` (``cpu_millis`` or ``memory_mb``): the GPUs
    exist, but no node that has them has that much of it; ``most`` is the most such a node
    has. ``models``: the GPU models of the vendors it accepts, when none matches its
    ``gpu_models``.
    """

    request: PlacementRequest
    largest_gpu: Gpu | None
    most_gpus: int
    real_only: bool = False
    short_of: Literal["cpu_millis", "memory_mb"] | None = None
    most: int = 0
    models: tuple[str, ...] = ()

    @property
    def field(self) -> ImpossibleField:
        """The request field at fault."""
        if self.short_of is not None:
            return self.short_of
        if self.largest_gpu is None:
            return "gpu_models" if self.request.gpu_models else "vendor"
        if self.largest_gpu.vram_mb < self.request.vram_mb:
            return "vram_mb"
        return "gpu_count"

    @property
    def message(self) -> str:
        """Why, naming the largest GPU (or the node resource, or the models there are)."""
        r = self.request
        vendor = "any vendor" if r.vendor == "any" else r.vendor
        real = ", real GPUs only" if self.real_only else ""
        kind = "real GPU" if self.real_only else "GPU"
        models = f" of model {' or '.join(r.gpu_models)}" if r.gpu_models else ""
        asked = f"{r.gpu_count} x {r.vram_mb} MiB{models} ({vendor}{real}) on one node"
        if self.short_of is not None:
            amount = r.cpu_millis if self.short_of == "cpu_millis" else r.memory_mb
            unit = "CPU millis" if self.short_of == "cpu_millis" else "MiB of memory"
            return (
                f"{asked} with {amount} {unit} is impossible: the nodes with such GPUs have "
                f"at most {self.most} {unit}"
            )
        if self.largest_gpu is None:
            if r.gpu_models:
                there = ", ".join(self.models) if self.models else "none"
                return (
                    f"{asked} is impossible: the inventory has no {kind}{models} of {vendor} "
                    f"(its models: {there})"
                )
            return f"{asked} is impossible: the inventory has no {kind} of {vendor}"
        gpu = self.largest_gpu
        largest = (
            f"the largest {kind} is {gpu.model} with {gpu.vram_mb} MiB ({gpu.node}/{gpu.index})"
        )
        if gpu.vram_mb < r.vram_mb:
            return f"{asked} is impossible: {largest}"
        return (
            f"{asked} is impossible: at most {self.most_gpus} {kind}(s) with {r.vram_mb} MiB "
            f"sit on one node; {largest}"
        )


@dataclass(frozen=True, slots=True)
class Decision:
    """One scheduling pass: what to place, what can never be placed, what waits.

    Pass ``reservations`` to the next pass: the aging bound holds only if they are kept.
    ``unplaced``: why a waiting request waits, where more can be said than "no room now"
    (one that needs a real GPU: ``REAL_GPU_BUSY``, its message saying whether simulated
    GPUs have room). ``tried``: every request the pass tried to place, in the order it tried
    them (priority, reservations, fair share: what decided who got the last room).
    """

    placements: tuple[Placement, ...]
    impossible: tuple[Impossible, ...]
    waiting: tuple[PlacementRequest, ...]
    reservations: Mapping[AllocationKey, Reservation] = field(default_factory=dict)
    unplaced: Mapping[AllocationKey, Unplaced] = field(default_factory=dict)
    tried: tuple[AllocationKey, ...] = ()


#: The reason of a request that needs a real GPU and waits (no real GPU has room for it).
REAL_GPU_BUSY = "RealGpuBusy"


@dataclass(frozen=True, slots=True)
class Unplaced:
    """Why a waiting request waits: a condition reason (CamelCase) and a message."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Fragmentation:
    """Free VRAM the waiting requests cannot use (see docs/architecture.md for the rule).

    ``free_mb``: free VRAM on schedulable GPUs of ready nodes; ``unusable_mb``: the mean over
    the waiting requests of the free VRAM on GPUs that request could not be placed on now.
    """

    free_mb: int
    unusable_mb: float
    requests: int

    @property
    def fraction(self) -> float:
        """``unusable_mb / free_mb`` (0 when nothing is free)."""
        return self.unusable_mb / self.free_mb if self.free_mb > 0 else 0.0
