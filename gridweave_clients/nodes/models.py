"""The wire model of kuberay-service's node registry (``GET /v1/nodes``), shared with clients.

kuberay-service answers it; the gateway's inventory reads it. The admins' join keys
(``/v1/nodes/join-keys``) are declared here too. Unknown fields in answers are ignored, so
the registry may add fields without breaking readers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridweave_clients.metering.models import NodeName
from gridweave_controller.vendors import GpuVendor

__all__ = [
    "MAX_CPU_MILLIS",
    "MAX_GPUS_PER_NODE",
    "MAX_MEMORY_MB",
    "MAX_JOIN_KEY_TTL_SECONDS",
    "CordonNodeRequest",
    "CreateJoinKeyRequest",
    "CreatedJoinKeyResponse",
    "JoinKeyListResponse",
    "JoinKeyResponse",
    "NodeGpuResponse",
    "NodeListResponse",
    "NodeName",
    "NodeReadiness",
    "NodeResponse",
]

#: The most GPUs one node may declare (CUDA and HIP index devices with small integers).
MAX_GPUS_PER_NODE = 64
#: The most CPU (thousandths of a core) and memory (MiB) one node may declare: 65,536 cores
#: and 1 PiB, far above any machine made.
MAX_CPU_MILLIS = 65_536_000
MAX_MEMORY_MB = 2**30
#: The longest a join key may live: 90 days.
MAX_JOIN_KEY_TTL_SECONDS = 90 * 86_400

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
    cpu_millis: int | None = Field(
        default=None,
        ge=1,
        le=MAX_CPU_MILLIS,
        description="CPU the node's work may use, thousandths of a core; None: not said.",
    )
    memory_mb: int | None = Field(
        default=None,
        ge=1,
        le=MAX_MEMORY_MB,
        description="Memory the node's work may use, MiB; None: not said.",
    )

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


class CordonNodeRequest(BaseModel):
    """Cordon a node (it takes no new work; what runs there stays) or uncordon it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    cordoned: bool


class CreateJoinKeyRequest(BaseModel):
    """A new join key: its lifetime, how many nodes may join with it, which GPUs they bring."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    description: str = Field(default="", max_length=200, description="What the key is for.")
    ttl_seconds: int = Field(
        default=86_400,
        ge=60,
        le=MAX_JOIN_KEY_TTL_SECONDS,
        description="Seconds until the key expires (default one day).",
    )
    max_uses: int = Field(
        default=1, ge=1, le=10_000, description="How many nodes may join with the key."
    )
    max_gpus: int | None = Field(
        default=None,
        ge=1,
        le=MAX_GPUS_PER_NODE,
        description="The most GPUs a node joining with it may declare; unset: no limit.",
    )
    vendor: GpuVendor | None = Field(
        default=None, description="Only GPUs of this vendor may join with it; unset: any."
    )


class JoinKeyResponse(_Answer):
    """A join key as listed: never the key itself (only its hash is stored)."""

    id: str
    description: str
    created_by: str | None
    created_at: datetime
    expires_at: datetime
    max_uses: int
    uses: int = Field(description="Nodes that joined with it (a node re-validating is not one).")
    max_gpus: int | None
    vendor: GpuVendor | None
    revoked_at: datetime | None


class CreatedJoinKeyResponse(JoinKeyResponse):
    """A join key just created: ``key`` is shown this once."""

    key: str


class JoinKeyListResponse(_Answer):
    """Every join key, newest first."""

    join_keys: tuple[JoinKeyResponse, ...] = ()
