"""The metering tables.

Invariants:

- One usage record per credit hold: ``UNIQUE (hold_reference)``. A job's hold reference is
  its job id, so a job has one record; each run of an endpoint must carry its own (no
  default: a shared one would make a later run look like a replay and go unbilled). A replay
  finds the first record and never charges again.
- ``billed_seconds = ceil(wall_seconds)``, ``cost = billed_seconds * gpu_count *
  price_per_gpu_second``, all integers (micro-credits); the price is copied onto the record,
  so a later price change never rewrites history.
- ``settlement_amount <= cost``: what is sent to credit_service (the cost, or the hold's
  amount when the cost exceeds it); it is persisted before it is sent, so every retry sends
  the same amount.
- ``settlement_state`` moves only through ``services.settlement.switch_settlement_state``:
  ``pending -> settled | refused``, ``refused -> settled | refused``; ``settled`` is final.
- Every settled record has one ``receipt_outbox`` row (``UNIQUE (usage_id)``), written in
  the transaction that settles it; ``delivered`` exactly when chain_service gave it a seq.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    Identity,
    Index,
    Integer,
    SmallInteger,
    String,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "MeteringBase",
    "ReceiptOutboxModel",
    "ReceiptState",
    "SettlementState",
    "UsageKind",
    "UsageRecordModel",
]


class MeteringBase(DeclarativeBase):
    """Declarative base of metering_service's tables."""


class UsageKind:
    """What a usage record bills: a job or an endpoint run."""

    JOB = "job"
    ENDPOINT = "endpoint"


class SettlementState:
    """Where a record's settlement with credit_service stands."""

    PENDING = "pending"
    SETTLED = "settled"
    REFUSED = "refused"


class UsageRecordModel(MeteringBase):
    """The usage of one finished job or endpoint run, its cost and its settlement."""

    __tablename__ = "usage_records"
    __table_args__ = (
        UniqueConstraint("hold_reference", name="uq_usage_records_hold_reference"),
        CheckConstraint("kind IN ('job', 'endpoint')", name="kind_known"),
        CheckConstraint("wall_seconds >= 0", name="wall_seconds_not_negative"),
        CheckConstraint("billed_seconds >= 0", name="billed_seconds_not_negative"),
        CheckConstraint("gpu_count >= 1", name="gpu_count_positive"),
        CheckConstraint("cost >= 0", name="cost_not_negative"),
        CheckConstraint(
            "settlement_amount >= 0 AND settlement_amount <= cost", name="settlement_within_cost"
        ),
        CheckConstraint(
            "settlement_state IN ('pending', 'settled', 'refused')", name="settlement_state_known"
        ),
        Index("ix_usage_records_user_id_finished_at", "user_id", "finished_at"),
        Index("ix_usage_records_kind_subject_id", "kind", "subject_id"),
        Index(
            "ix_usage_records_unsettled",
            "id",
            postgresql_where="settlement_state <> 'settled'",
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    subject_id: Mapped[str] = mapped_column(String(200))
    hold_reference: Mapped[str] = mapped_column(String(200))
    user_id: Mapped[str] = mapped_column(String(128))
    owner_id: Mapped[str] = mapped_column(String(128))
    node: Mapped[str] = mapped_column(String(253))
    gpu_indices: Mapped[list[int]] = mapped_column(ARRAY(Integer))
    vendor: Mapped[str] = mapped_column(String(32))
    vram_mb: Mapped[int] = mapped_column(Integer)
    gpu_count: Mapped[int] = mapped_column(SmallInteger)
    wall_seconds: Mapped[float] = mapped_column(Double)
    billed_seconds: Mapped[int] = mapped_column(BigInteger)
    price_per_gpu_second: Mapped[int] = mapped_column(BigInteger)
    cost: Mapped[int] = mapped_column(BigInteger)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    settlement_state: Mapped[str] = mapped_column(String(16), default=SettlementState.PENDING)
    settlement_amount: Mapped[int] = mapped_column(BigInteger)
    settlement_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    settlement_error_code: Mapped[str | None] = mapped_column(String(64), default=None)
    settlement_error: Mapped[str | None] = mapped_column(String(500), default=None)
    charged: Mapped[int | None] = mapped_column(BigInteger, default=None)
    hold_id: Mapped[int | None] = mapped_column(BigInteger, default=None)
    settled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    gpu_model: Mapped[str | None] = mapped_column(String(200), default=None)
    result_ref_sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class ReceiptState:
    """Where a settled record's receipt stands with chain_service."""

    QUEUED = "queued"
    DELIVERED = "delivered"
    REFUSED = "refused"


class ReceiptOutboxModel(MeteringBase):
    """A settled record's receipt, queued for chain_service until it is in the chain."""

    __tablename__ = "receipt_outbox"
    __table_args__ = (
        UniqueConstraint("usage_id", name="uq_receipt_outbox_usage_id"),
        CheckConstraint("state IN ('queued', 'delivered', 'refused')", name="receipt_state_known"),
        CheckConstraint(
            "(state = 'delivered') = (receipt_seq IS NOT NULL)", name="delivered_has_seq"
        ),
        Index(
            "ix_receipt_outbox_due",
            "next_attempt_at",
            "id",
            postgresql_where="state = 'queued'",
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    usage_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("usage_records.id"))
    state: Mapped[str] = mapped_column(String(16), server_default=ReceiptState.QUEUED)
    attempts: Mapped[int] = mapped_column(Integer, server_default="0")
    next_attempt_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now()
    )
    receipt_seq: Mapped[int | None] = mapped_column(BigInteger, default=None)
    last_error: Mapped[str | None] = mapped_column(String(500), default=None)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
