"""The node registry's tables (database ``kuberay``).

Invariants:

- ``join_keys``: only a SHA-256 of the key is stored (the key is 32 random bytes, shown
  once). A key is never deleted, only revoked (``revoked_at``), so every node keeps the key
  it joined with. ``uses`` counts the nodes that joined with it and only grows: a node
  re-validating with its key again is not a new use, a node that left does not give one back.
- ``nodes``: one row per hostname (``name``), from its first validation until it leaves.
  ``vpn_ip`` is UNIQUE: two nodes can never hold one address, whatever races (the allocator
  retries on the constraint). ``wireguard_public_key`` and ``token_hash`` are UNIQUE too.
  ``joined_at`` is set by register; a node with none has validated but not joined.
  ``gpus`` is the node's inventory as declared at validation, each GPU with the health and
  free VRAM of the last heartbeat.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Integer,
    String,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["VPN_IP_CONSTRAINT", "JoinKeyModel", "KubeRayBase", "NodeModel"]

#: PostgreSQL's name of the UNIQUE constraint on ``nodes.vpn_ip`` (migration 0001).
VPN_IP_CONSTRAINT = "nodes_vpn_ip_key"


class KubeRayBase(DeclarativeBase):
    """Declarative base of kuberay-service's tables."""


class JoinKeyModel(KubeRayBase):
    """A join key: who may join, until when, how many nodes, with which GPUs."""

    __tablename__ = "join_keys"
    __table_args__ = (
        CheckConstraint("max_uses >= 1", name="max_uses_positive"),
        CheckConstraint("uses >= 0 AND uses <= max_uses", name="uses_within_max"),
        CheckConstraint("max_gpus IS NULL OR max_gpus >= 1", name="max_gpus_positive"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str] = mapped_column(String(200), default="")
    created_by: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    max_uses: Mapped[int] = mapped_column(Integer)
    uses: Mapped[int] = mapped_column(Integer, default=0)
    max_gpus: Mapped[int | None] = mapped_column(Integer)
    vendor: Mapped[str | None] = mapped_column(String(16))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class NodeModel(KubeRayBase):
    """A node that validated (and, once ``joined_at`` is set, registered)."""

    __tablename__ = "nodes"
    __table_args__ = (
        CheckConstraint("cpu_millis IS NULL OR cpu_millis >= 1", name="cpu_millis_positive"),
        CheckConstraint("memory_mb IS NULL OR memory_mb >= 1", name="memory_mb_positive"),
    )

    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    join_key_id: Mapped[str] = mapped_column(ForeignKey("join_keys.id"))
    wireguard_public_key: Mapped[str] = mapped_column(String(44), unique=True)
    vpn_ip: Mapped[str] = mapped_column(String(45), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    gpus: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    labels: Mapped[dict[str, str]] = mapped_column(JSONB, default=dict)
    #: What the node's work may use in all (None: the node did not say).
    cpu_millis: Mapped[int | None] = mapped_column(BigInteger)
    memory_mb: Mapped[int | None] = mapped_column(BigInteger)
    cordoned: Mapped[bool] = mapped_column(Boolean, default=False)
    validated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    joined_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
