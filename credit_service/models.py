"""The credit ledger's tables.

Invariants (the database enforces the first three; tests check the rest):

- ``accounts.balance >= 0``, ``accounts.held >= 0``, ``accounts.held <= accounts.balance``:
  a balance never goes negative and holds never exceed it; ``accounts.balance <= 10^18``
  (``MAX_BALANCE``): no sum of postings can pass BIGINT.
- ``ledger_entries`` is append-only (a trigger refuses UPDATE, DELETE and TRUNCATE).
- ``accounts.balance == sum(ledger_entries.amount)`` for the account: every change to a
  balance is an entry, written by ``services.ledger.move_money`` and nothing else.
- ``accounts.held == sum(holds.amount)`` over the account's open holds.
- A hold placed on a capped account keeps the month's spending (``deduct``, ``capture`` and
  ``settlement`` entries since the first of the month, UTC, plus ``held``) within the lower
  of ``monthly_cap`` and ``admin_monthly_cap``, and its amount within the lower of
  ``per_job_cap`` and ``admin_per_job_cap`` (``services.spending_limits``; NULL: no cap).
- An ``operations`` row exists per (caller, kind, idempotency key) that moved money; a retry
  replays it. ``caller`` is the calling service's role, so no caller can claim another's key.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    SmallInteger,
    String,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from gridweave_clients.credit.models import MAX_BALANCE

__all__ = [
    "AccountModel",
    "CreditBase",
    "HoldModel",
    "HoldStatus",
    "LedgerEntryModel",
    "OperationModel",
]


class CreditBase(DeclarativeBase):
    """Declarative base of credit_service's tables."""


class HoldStatus:
    """The states of a hold: open until captured (part or all, rest released) or released."""

    OPEN = "open"
    CAPTURED = "captured"
    RELEASED = "released"


class AccountModel(CreditBase):
    """One account per user; ``balance`` and ``held`` are caches kept equal to their sums."""

    __tablename__ = "accounts"
    __table_args__ = (
        CheckConstraint("balance >= 0", name="balance_not_negative"),
        CheckConstraint("held >= 0", name="held_not_negative"),
        CheckConstraint("held <= balance", name="held_within_balance"),
        CheckConstraint(f"balance <= {MAX_BALANCE}", name="balance_within_maximum"),
        CheckConstraint("monthly_cap >= 0", name="monthly_cap_not_negative"),
        CheckConstraint("per_job_cap >= 0", name="per_job_cap_not_negative"),
        CheckConstraint("admin_monthly_cap >= 0", name="admin_monthly_cap_not_negative"),
        CheckConstraint("admin_per_job_cap >= 0", name="admin_per_job_cap_not_negative"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), unique=True)
    balance: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    held: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # spending caps in micro-credits, the user's and an admin's (NULL: none); migration 0004
    monthly_cap: Mapped[int | None] = mapped_column(BigInteger, default=None)
    per_job_cap: Mapped[int | None] = mapped_column(BigInteger, default=None)
    admin_monthly_cap: Mapped[int | None] = mapped_column(BigInteger, default=None)
    admin_per_job_cap: Mapped[int | None] = mapped_column(BigInteger, default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class LedgerEntryModel(CreditBase):
    """One change to one balance, in micro-credits (negative takes money out); never edited."""

    __tablename__ = "ledger_entries"
    __table_args__ = (
        CheckConstraint("amount <> 0", name="amount_not_zero"),
        CheckConstraint("balance_after >= 0", name="balance_after_not_negative"),
        Index("ix_ledger_entries_account_id_id", "account_id", "id"),
        Index(
            "ix_ledger_entries_spending",
            "account_id",
            "created_at",
            postgresql_include=["amount"],
            postgresql_where="kind IN ('deduct', 'capture', 'settlement')",
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"))
    amount: Mapped[int] = mapped_column(BigInteger)
    balance_after: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(32))
    operation_key: Mapped[str] = mapped_column(String(200), index=True)
    hold_id: Mapped[int | None] = mapped_column(ForeignKey("holds.id"), default=None)
    counterparty_account_id: Mapped[int | None] = mapped_column(
        ForeignKey("accounts.id"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class HoldModel(CreditBase):
    """Money set aside on an account; ``reference`` (a job id) settles it exactly once."""

    __tablename__ = "holds"
    __table_args__ = (
        CheckConstraint("amount > 0", name="amount_positive"),
        CheckConstraint("captured >= 0 AND captured <= amount", name="captured_within_amount"),
        CheckConstraint("status IN ('open', 'captured', 'released')", name="status_known"),
        Index("ix_holds_account_id_open", "account_id", postgresql_where="status = 'open'"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"))
    amount: Mapped[int] = mapped_column(BigInteger)
    captured: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    status: Mapped[str] = mapped_column(String(16), default=HoldStatus.OPEN)
    reference: Mapped[str | None] = mapped_column(String(200), unique=True, default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class OperationModel(CreditBase):
    """An idempotency key that moved money: what was asked and what was answered.

    Keyed per calling service (``caller``, its role; ``''`` for settlements, whose key is
    derived from the reference) and operation (``kind``).
    """

    __tablename__ = "operations"

    caller: Mapped[str] = mapped_column(String(64), primary_key=True, server_default="")
    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int] = mapped_column(SmallInteger, default=200)
    response: Mapped[dict[str, Any] | None] = mapped_column(JSONB, default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
