"""Request and answer bodies of the node routes (validate, register, heartbeat, leave).

``GET /v1/nodes`` answers :class:`gridweave_clients.nodes.NodeListResponse`, the wire
model the gateway's inventory reads: it is declared once, in the clients package.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gridweave_clients.nodes.models import (
    MAX_CPU_MILLIS,
    MAX_GPUS_PER_NODE,
    MAX_MEMORY_MB,
    CordonNodeRequest,
)
from gridweave_controller.vendors import GpuVendor

__all__ = [
    "HOSTNAME_PATTERN",
    "CordonNodeRequest",
    "GpuHealth",
    "GpuSpec",
    "HeartbeatRequest",
    "K3sJoin",
    "MasterPeer",
    "ValidateNodeRequest",
    "ValidatedNodeResponse",
]

#: A Kubernetes node name: a lower-case DNS-1123 subdomain (K3s names nodes by hostname).
HOSTNAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_LABEL_KEY = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
_LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$"


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _indices_unique(indices: list[int]) -> None:
    if len(set(indices)) != len(indices):
        raise ValueError(f"GPU indices repeat: {sorted(indices)}")


class GpuSpec(_Request):
    """One GPU of a joining node; a node may mix models and vendors."""

    index: int = Field(ge=0, lt=MAX_GPUS_PER_NODE, description="CUDA/HIP index.")
    vendor: GpuVendor
    model: str = Field(min_length=1, max_length=200, description="Marketing name.")
    vram_mb: int = Field(ge=1, le=16 * 2**20, description="Total VRAM, MiB.")


class ValidateNodeRequest(_Request):
    """``POST /v1/nodes/validate``: a node asking to join with a join key."""

    join_key: str = Field(min_length=1, max_length=200)
    hostname: str = Field(min_length=1, max_length=253, pattern=HOSTNAME_PATTERN)
    wireguard_public_key: str = Field(min_length=44, max_length=44)
    gpus: list[GpuSpec] = Field(min_length=1, max_length=MAX_GPUS_PER_NODE)
    labels: dict[
        Annotated[str, Field(max_length=253, pattern=_LABEL_KEY)],
        Annotated[str, Field(max_length=63, pattern=_LABEL_VALUE)],
    ] = Field(default_factory=dict, max_length=32)
    cpu_millis: int | None = Field(
        default=None,
        ge=1,
        le=MAX_CPU_MILLIS,
        description="CPU the node's work may use, thousandths of a core (None: not said).",
    )
    memory_mb: int | None = Field(
        default=None,
        ge=1,
        le=MAX_MEMORY_MB,
        description="Memory the node's work may use, MiB (None: not said).",
    )

    @field_validator("wireguard_public_key")
    @classmethod
    def _a_curve25519_key(cls, value: str) -> str:
        try:
            raw = base64.b64decode(value, validate=True)
        except binascii.Error:
            raw = b""
        if len(raw) != 32:
            raise ValueError("not a WireGuard public key (base64 of 32 bytes)")
        return value

    @field_validator("gpus")
    @classmethod
    def _gpu_indices_unique(cls, gpus: list[GpuSpec]) -> list[GpuSpec]:
        _indices_unique([gpu.index for gpu in gpus])
        return gpus


class MasterPeer(BaseModel):
    """The master's end of the node's WireGuard tunnel."""

    model_config = ConfigDict(frozen=True)

    public_key: str
    endpoint: str
    vpn_ip: str


class K3sJoin(BaseModel):
    """What the node's K3s agent joins with."""

    model_config = ConfigDict(frozen=True)

    url: str
    token: str


class ValidatedNodeResponse(BaseModel):
    """A validated node: its mesh address, its token, and where it joins.

    ``node_token`` (shown once, stored hashed) authenticates the node's register,
    heartbeat and leave calls.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    vpn_ip: str
    vpn_cidr: str
    node_token: str
    master: MasterPeer
    k3s: K3sJoin
    registry: str | None
    heartbeat_interval_seconds: float


class GpuHealth(_Request):
    """One GPU in a heartbeat."""

    index: int = Field(ge=0, lt=MAX_GPUS_PER_NODE)
    healthy: bool
    free_vram_mb: int = Field(ge=0, le=16 * 2**20)


class HeartbeatRequest(_Request):
    """``POST /v1/nodes/heartbeat``: the node is alive; its GPUs' health and free VRAM."""

    gpus: list[GpuHealth] = Field(default_factory=list, max_length=MAX_GPUS_PER_NODE)

    @field_validator("gpus")
    @classmethod
    def _gpu_indices_unique(cls, gpus: list[GpuHealth]) -> list[GpuHealth]:
        _indices_unique([gpu.index for gpu in gpus])
        return gpus
