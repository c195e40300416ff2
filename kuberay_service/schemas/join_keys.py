"""Request and answer bodies of ``/v1/nodes/join-keys`` (admins only)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from gridweave_clients.nodes.models import MAX_GPUS_PER_NODE
from gridweave_controller.vendors import GpuVendor

__all__ = [
    "MAX_JOIN_KEY_TTL_SECONDS",
    "CreateJoinKeyRequest",
    "CreatedJoinKeyResponse",
    "JoinKeyListResponse",
    "JoinKeyResponse",
]

#: The longest a join key may live: 90 days.
MAX_JOIN_KEY_TTL_SECONDS = 90 * 86_400


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


class JoinKeyResponse(BaseModel):
    """A join key as listed: never the key itself."""

    model_config = ConfigDict(frozen=True)

    id: str
    description: str
    created_by: str | None
    created_at: datetime
    expires_at: datetime
    max_uses: int
    uses: int
    max_gpus: int | None
    vendor: GpuVendor | None
    revoked_at: datetime | None


class CreatedJoinKeyResponse(JoinKeyResponse):
    """A join key just created: ``key`` is shown this once and stored only hashed."""

    key: str


class JoinKeyListResponse(BaseModel):
    """Every join key, newest first."""

    model_config = ConfigDict(frozen=True)

    join_keys: list[JoinKeyResponse]
