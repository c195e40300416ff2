"""The scheduler's values: requests, allocations, placements, reservations and reports.

Every value is immutable. VRAM is in MiB per GPU, the unit of ``spec.vramMb``. Times are
seconds on one clock (the gateway uses epoch seconds: ``metadata.creationTimestamp``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from gridweave_controller.models import Endpoint, Job
from gridweave_controller.vendors import VENDORS, Vendor
from job_gateway.inventory.models import Gpu

__all__ = [
    "Allocation",
    "AllocationKey",
    "Decision",
    "Fragmentation",
    "Impossible",
    "Kind",
    "Placement",
    "PlacementRequest",
    "Policy",
    "REAL_GPU_BUSY",
    "Reservation",
    "Unplaced",
    "endpoint_vram_mb",
]

#: What holds VRAM: a GridweaveJob or a GridweaveEndpoint.
Kind = Literal["job", "endpoint"]
#: binpack: the tightest GPUs that fit (default); spread: the emptiest.
Policy = Literal["binpack", "spread"]
#: An object's identity in the allocation map and in a decision: (kind, name).
AllocationKey = tuple[Kind, str]


@dataclass(frozen=True, slots=True)
class Allocation:
    """VRAM one object holds: ``vram_mb`` on each of ``gpu_indices`` of ``node``.

    ``provisional``: placed by the gateway, its status write not yet seen by the informer;
    an update that still shows the object unplaced leaves it held (see AllocationMap).
    """

    kind: Kind
    name: str
    node: str
    gpu_indices: tuple[int, ...]
    vram_mb: int
    provisional: bool = False

    def __post_init__(self) -> None:
        if len(set(self.gpu_indices)) != len(self.gpu_indices):
            raise ValueError(f"{self.kind} {self.name}: GPU indices repeat: {self.gpu_indices}")

    @property
    def key(self) -> AllocationKey:
        """(kind, name)."""
        return (self.kind, self.name)


def endpoint_vram_mb(vram_mb: int, max_replicas: int) -> int:
    """VRAM an endpoint holds on each of its GPUs: ``vram_mb`` for every replica Serve may
    start (all replicas run on the endpoint's one placement, each with its own share)."""
    return vram_mb * max(1, max_replicas)


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """A job or endpoint waiting for ``gpu_count`` GPUs with ``vram_mb`` free on each.

    ``real_gpu``: only GPUs with a real device behind them will do (a ``vllm`` endpoint),
    whenever the inventory has any; in one of simulated GPUs only, those (admission has let
    it in only where vLLM's CPU build serves, ``GATEWAY_VLLM_ALLOW_CPU``).
    """

    name: str
    vram_mb: int
    gpu_count: int = 1
    vendor: Vendor = "any"
    priority: int = 0
    submitted_at: float = 0.0
    kind: Kind = "job"
    real_gpu: bool = False

    def __post_init__(self) -> None:
        if self.vram_mb < 1:
            raise ValueError(f"{self.name}: vram_mb must be at least 1, not {self.vram_mb}")
        if self.gpu_count < 1:
            raise ValueError(f"{self.name}: gpu_count must be at least 1, not {self.gpu_count}")
        if self.vendor not in VENDORS:
            raise ValueError(f"{self.name}: unknown vendor {self.vendor!r}")

    @property
    def key(self) -> AllocationKey:
        """(kind, name)."""
        return (self.kind, self.name)

    @classmethod
    def from_job(cls, job: Job, *, priority: int | None = None) -> PlacementRequest:
        """The request of a Pending GridweaveJob (submitted at its creation time).

        ``priority`` defaults to the job's ``spec.priority``.
        """
        created = job.metadata.creation_timestamp
        return cls(
            name=job.name,
            vram_mb=job.spec.vram_mb,
            gpu_count=job.spec.gpu_count,
            vendor=job.spec.vendor,
            priority=job.spec.priority if priority is None else priority,
            submitted_at=created.timestamp() if created else 0.0,
        )

    @classmethod
    def from_endpoint(cls, endpoint: Endpoint, *, priority: int = 0) -> PlacementRequest:
        """The request of a GridweaveEndpoint waiting to be deployed: room on each GPU for
        ``maxReplicas`` replicas, on real GPUs for mode ``vllm``."""
        created = endpoint.metadata.creation_timestamp
        return cls(
            name=endpoint.name,
            vram_mb=endpoint_vram_mb(endpoint.spec.vram_mb, endpoint.spec.max_replicas),
            gpu_count=endpoint.spec.gpu_count,
            vendor=endpoint.spec.vendor,
            priority=priority,
            submitted_at=created.timestamp() if created else 0.0,
            kind="endpoint",
            real_gpu=endpoint.spec.mode == "vllm",
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
        return Allocation(
            kind=self.request.kind,
            name=self.request.name,
            node=self.node,
            gpu_indices=self.gpu_indices,
            vram_mb=self.request.vram_mb,
            provisional=provisional,
        )


@dataclass(frozen=True, slots=True)
class Reservation:
    """GPUs an aged request waits for: lower-ranked work may use only what it leaves."""

    key: AllocationKey
    node: str
    gpu_indices: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Impossible:
    """A request no GPU in the inventory can ever hold (the API answers 422 with ``message``).

    ``largest_gpu``: the largest GPU of a vendor the request accepts (None: there is none);
    ``most_gpus``: the most GPUs of such a vendor with at least ``vram_mb`` on one node;
    ``real_only``: only the real GPUs counted (the request needs one, and the inventory
    has simulated GPUs beside them).
    """

    request: PlacementRequest
    largest_gpu: Gpu | None
    most_gpus: int
    real_only: bool = False

    @property
    def message(self) -> str:
        """Why, naming the largest GPU."""
        r = self.request
        vendor = "any vendor" if r.vendor == "any" else r.vendor
        real = ", real GPUs only" if self.real_only else ""
        kind = "real GPU" if self.real_only else "GPU"
        asked = f"{r.gpu_count} x {r.vram_mb} MiB ({vendor}{real}) on one node"
        if self.largest_gpu is None:
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
    GPUs have room).
    """

    placements: tuple[Placement, ...]
    impossible: tuple[Impossible, ...]
    waiting: tuple[PlacementRequest, ...]
    reservations: Mapping[AllocationKey, Reservation] = field(default_factory=dict)
    unplaced: Mapping[AllocationKey, Unplaced] = field(default_factory=dict)


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
