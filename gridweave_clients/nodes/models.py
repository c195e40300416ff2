"""The wire model of kuberay-service's node registry (``GET /v1/nodes``), shared with clients.

kuberay-service answers it (issue 13 builds the route); the gateway's inventory reads it.
Unknown fields are ignored, so the registry may add fields without breaking readers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridweave_clients.metering.models import NodeName
from gridweave_controller.vendors import GpuVendor

__all__ = [
    "MAX_GPUS_PER_NODE",
    "NodeGpuResponse",
    "NodeListResponse",
    "NodeName",
    "NodeReadiness",
    "NodeResponse",
]

#: The most GPUs one node may declare (CUDA and HIP index devices with small integers).
MAX_GPUS_PER_NODE = 64

NodeReadiness = Literal["Ready", "NotReady"]


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class NodeGpuResponse(_Answer):
    """One GPU of a joined node, as its agent reported it."""

    index: Annotated[int, Field(ge=0, lt=MAX_GPUS_PER_NODE, description="CUDA/HIP index.")]
    vendor: GpuVendor
    model: Annotated[str, Field(min_length=1, max_length=200, description="Marketing name.")]
    vram_mb: Annotated[int, Field(ge=1, le=16 * 2**20, description="Total VRAM, MiB.")]
    cordoned: bool = Field(default=False, description="An admin took it out of scheduling.")
    healthy: bool = Field(default=True, description="The last heartbeat found it working.")
    free_vram_mb: int | None = Field(
        default=None,
        ge=0,
        description=(
            "Free VRAM in the last heartbeat, MiB (informational: the scheduler counts the "
            "VRAM held by GridweaveJob and GridweaveEndpoint objects instead)."
        ),
    )


class NodeResponse(_Answer):
    """One joined node: liveness, labels, VPN address and GPUs."""

    name: NodeName
    status: NodeReadiness = Field(description="NotReady once heartbeats stop.")
    cordoned: bool = Field(default=False, description="No new work: every GPU is cordoned.")
    labels: dict[str, str] = Field(default_factory=dict)
    vpn_ip: str | None = None
    joined_at: datetime | None = None
    last_heartbeat_at: datetime | None = None
    gpus: tuple[NodeGpuResponse, ...] = Field(default=(), max_length=MAX_GPUS_PER_NODE)

    @model_validator(mode="after")
    def _indices_unique(self) -> NodeResponse:
        indices = [gpu.index for gpu in self.gpus]
        if len(set(indices)) != len(indices):
            raise ValueError(f"node {self.name}: GPU indices repeat: {sorted(indices)}")
        return self


class NodeListResponse(_Answer):
    """``GET /v1/nodes``: every joined node."""

    nodes: tuple[NodeResponse, ...] = ()

    @model_validator(mode="after")
    def _names_unique(self) -> NodeListResponse:
        names = [node.name for node in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError("node names repeat")
        return self
