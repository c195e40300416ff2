"""What the cluster has: nodes and their GPUs, as every inventory source reports them.

Invariants (checked on construction): node names are unique; each GPU names its own node;
GPU indices are unique on a node. ``vram_mb`` is the GPU's total VRAM in MiB (the unit of
``spec.vramMb``); ``index`` is what ``status.gpuIndices`` holds. A GPU takes work only when
its node is ready and it is not cordoned (:attr:`Gpu.schedulable`). A simulated GPU (no
real device behind it) says so in ``simulated``, which every view of it shows. ``used_mb``
is what was measured in use (a node's last heartbeat, NVML or amdsmi on this machine) and
``utilization_percent`` how busy it was (NVML or amdsmi on this machine), None where nothing
measures them (rocm-smi, declared and simulated GPUs); neither changes where work goes.
A node's ``cpu_millis`` (thousandths of a core) and ``memory_mb`` (MiB) are what the work
placed on it may use in all; None where nothing declared or measured it, and then the
scheduler places on that node by its GPUs alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridweave_clients.nodes.models import (
    MAX_CPU_MILLIS,
    MAX_GPUS_PER_NODE,
    MAX_MEMORY_MB,
    NodeName,
)
from gridweave_controller.vendors import GpuVendor

__all__ = [
    "MAX_CPU_MILLIS",
    "MAX_GPUS_PER_NODE",
    "MAX_MEMORY_MB",
    "MAX_VRAM_MB",
    "Gpu",
    "Inventory",
    "Node",
    "NodeName",
]

#: The largest VRAM one GPU may declare: 16 TiB, far above any device made.
MAX_VRAM_MB = 16 * 2**20


#: What :meth:`Inventory.same_capacity` leaves out: measurements, not capacity.
_MEASURED: Any = {"nodes": {"__all__": {"gpus": {"__all__": {"used_mb", "utilization_percent"}}}}}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Gpu(_Frozen):
    """One GPU: where it is, who made it, how much VRAM it has, and whether it takes work."""

    node: NodeName
    index: Annotated[int, Field(ge=0, lt=MAX_GPUS_PER_NODE, description="CUDA/HIP index.")]
    vendor: GpuVendor
    model: Annotated[str, Field(min_length=1, max_length=200)]
    vram_mb: Annotated[int, Field(ge=1, le=MAX_VRAM_MB, description="Total VRAM, MiB.")]
    schedulable: bool = Field(default=True, description="False: cordoned, takes no new work.")
    simulated: bool = Field(default=False, description="No real device: a declared stand-in.")
    used_mb: int | None = Field(
        default=None,
        ge=0,
        le=MAX_VRAM_MB,
        description="VRAM measured in use, MiB; None: not measured (never guessed).",
    )
    utilization_percent: float | None = Field(
        default=None,
        ge=0,
        le=100,
        description="Share of the last sample period the GPU was busy, %; None: not measured.",
    )
    device_index: int | None = Field(
        default=None,
        ge=0,
        lt=MAX_GPUS_PER_NODE,
        description=(
            "The vendor runtime's own index (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES) when "
            "it differs from ``index``: on a machine with both vendors the AMD GPUs are "
            "numbered after the NVIDIA ones, while HIP counts them from 0."
        ),
    )

    @property
    def visible_index(self) -> int:
        """The index to put in ``CUDA_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES``."""
        return self.index if self.device_index is None else self.device_index

    @property
    def cordoned(self) -> bool:
        """Taken out of scheduling."""
        return not self.schedulable

    def __str__(self) -> str:
        mark = " [simulated]" if self.simulated else ""
        return f"{self.node}/{self.index} {self.vendor} {self.model} {self.vram_mb} MiB{mark}"


class Node(_Frozen):
    """One machine: its name, liveness (ready or NotReady), labels, CPU, memory and GPUs."""

    name: NodeName
    ready: bool = True
    labels: dict[str, str] = Field(default_factory=dict)
    gpus: tuple[Gpu, ...] = Field(default=(), max_length=MAX_GPUS_PER_NODE)
    cpu_millis: int | None = Field(
        default=None,
        ge=1,
        le=MAX_CPU_MILLIS,
        description="CPU the work placed here may use, thousandths of a core; None: unknown.",
    )
    memory_mb: int | None = Field(
        default=None,
        ge=1,
        le=MAX_MEMORY_MB,
        description="Memory the work placed here may use, MiB; None: unknown.",
    )

    @model_validator(mode="after")
    def _gpus_belong(self) -> Node:
        indices = set()
        for gpu in self.gpus:
            if gpu.node != self.name:
                raise ValueError(f"GPU {gpu.index} names node {gpu.node!r}, not {self.name!r}")
            if gpu.index in indices:
                raise ValueError(f"node {self.name}: GPU index {gpu.index} repeats")
            indices.add(gpu.index)
        return self


class Inventory(_Frozen):
    """Every node and GPU one source knows of."""

    nodes: tuple[Node, ...] = ()

    @model_validator(mode="after")
    def _names_unique(self) -> Inventory:
        seen: set[str] = set()
        for node in self.nodes:
            if node.name in seen:
                raise ValueError(f"node {node.name!r} appears twice")
            seen.add(node.name)
        return self

    def gpus(self) -> Iterator[Gpu]:
        """Every GPU, node by node."""
        for node in self.nodes:
            yield from node.gpus

    def node(self, name: str) -> Node | None:
        """The node of that name, if known."""
        return next((node for node in self.nodes if node.name == name), None)

    def same_capacity(self, other: Inventory) -> bool:
        """Equal but for the measurements (``used_mb``, ``utilization_percent``): what the
        scheduler decides on is the same."""
        return self.model_dump(exclude=_MEASURED) == other.model_dump(exclude=_MEASURED)

    @property
    def simulated(self) -> bool:
        """Some GPU is simulated."""
        return any(gpu.simulated for gpu in self.gpus())
