"""The chain tables.

Invariants (the constraints and triggers of migration 0001 hold them in PostgreSQL itself):

- ``receipts`` is append-only: a trigger refuses every UPDATE and DELETE.
- One receipt per settlement: ``UNIQUE (hold_reference)``.
- No fork: ``seq`` is the primary key and ``prev_hash`` is ``UNIQUE``, so two receipts can
  never follow the same one; the first receipt (and only it) follows ``GENESIS_HASH``.
  Appends also take an advisory lock, so concurrent appends queue instead of failing.
- ``hash`` = ``encoding.receipt_hash(fields, seq, prev_hash)``, computed by chain_service;
  the database cannot recompute it, the verifier does.
- Batches tile the chain: batch n covers ``first_seq ..= last_seq`` right after batch
  n - 1 (``UNIQUE`` first and last seq, ``leaf_count = last_seq - first_seq + 1``); a
  batch's sealed columns never change (trigger), only its anchor is filled in once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Identity,
    Integer,
    SmallInteger,
    String,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["BatchModel", "ChainBase", "ReceiptModel"]

_HEX64 = "'^[0-9a-f]{64}$'"


class ChainBase(DeclarativeBase):
    """Declarative base of chain_service's tables."""


class ReceiptModel(ChainBase):
    """One settlement's receipt at position ``seq`` of the chain."""

    __tablename__ = "receipts"
    __table_args__ = (
        UniqueConstraint("hold_reference", name="uq_receipts_hold_reference"),
        UniqueConstraint("prev_hash", name="uq_receipts_prev_hash"),
        UniqueConstraint("hash", name="uq_receipts_hash"),
        CheckConstraint("seq >= 1", name="seq_positive"),
        CheckConstraint(f"prev_hash ~ {_HEX64} AND hash ~ {_HEX64}", name="hashes_hex"),
        CheckConstraint(
            "(seq = 1) = (prev_hash = repeat('0', 64))", name="only_the_first_follows_genesis"
        ),
    )

    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    subject_id: Mapped[str] = mapped_column(String(200), index=True)
    hold_reference: Mapped[str] = mapped_column(String(200))
    user_id: Mapped[str] = mapped_column(String(128))
    owner_id: Mapped[str] = mapped_column(String(128))
    node: Mapped[str] = mapped_column(String(253))
    vendor: Mapped[str] = mapped_column(String(32))
    gpu_model: Mapped[str | None] = mapped_column(String(200))
    gpu_count: Mapped[int] = mapped_column(SmallInteger)
    vram_mb: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    wall_microseconds: Mapped[int] = mapped_column(BigInteger)
    billed_seconds: Mapped[int] = mapped_column(BigInteger)
    price_per_gpu_second: Mapped[int] = mapped_column(BigInteger)
    cost: Mapped[int] = mapped_column(BigInteger)
    charged: Mapped[int] = mapped_column(BigInteger)
    settled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    result_ref_sha256: Mapped[str | None] = mapped_column(String(64))
    recorded_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now()
    )


class BatchModel(ChainBase):
    """Receipts ``first_seq ..= last_seq`` under one Merkle root, signed; anchored later."""

    __tablename__ = "batches"
    __table_args__ = (
        UniqueConstraint("first_seq", name="uq_batches_first_seq"),
        UniqueConstraint("last_seq", name="uq_batches_last_seq"),
        CheckConstraint("first_seq >= 1 AND first_seq <= last_seq", name="seq_range"),
        CheckConstraint("leaf_count = last_seq - first_seq + 1", name="leaf_count_matches"),
        CheckConstraint(f"root ~ {_HEX64} AND last_hash ~ {_HEX64}", name="hashes_hex"),
    )

    batch_id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    first_seq: Mapped[int] = mapped_column(BigInteger)
    last_seq: Mapped[int] = mapped_column(BigInteger)
    leaf_count: Mapped[int] = mapped_column(Integer)
    root: Mapped[str] = mapped_column(String(64))
    last_hash: Mapped[str] = mapped_column(String(64))
    signature: Mapped[str] = mapped_column(String(128))
    public_key: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    anchor_chain_id: Mapped[str | None] = mapped_column(String(64), default=None)
    anchor_height: Mapped[int | None] = mapped_column(BigInteger, default=None)
    anchor_tx_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    anchor_proof: Mapped[dict[str, Any] | None] = mapped_column(JSONB, default=None)
    anchored_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
