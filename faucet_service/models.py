"""The faucet tables.

Invariants:

- ``verifications``: one row per mailbox (``email`` is the canonical mailbox,
  ``faucet_service.mailboxes``; ``recipient`` the address the code was sent to); only an
  HMAC of the code is stored in it.
  The code verifies only for ``user_id``, the user it was issued to; a sign-up by another
  user replaces it only once it is expired or locked. ``failed_attempts`` only grows until
  a new sign-up replaces the code.
- ``sign_in_codes``: one row per mailbox, the current sign-in code of an existing user
  (HMAC only), issued to ``user_id``; it signs in once (``used_at``), until ``expires_at``,
  and locks after ``code_max_attempts`` wrong tries. A new request replaces it (tries reset)
  unless a live code of another user holds the mailbox.
- ``grants``: one onboarding grant per mailbox and one per user (both UNIQUE); its credit
  idempotency key is derived from the mailbox (keyed with the code secret) and stored, so
  credit_service mints it once whatever happens here.
- ``refills``: committed as ``pending`` before credit_service is called, with a fresh
  idempotency key, so a replay finishes that refill instead of minting another.
- ``state`` of grants and refills moves ``pending -> minted`` only, through
  ``services.minting.mint_pending``.
- ``rate_limit_hits``: one row per counted request; the sliding window counts them.
- ``outbox_messages``: every verification email. ``kept`` when no SMTP server is set (the
  operator reads them through ``GET /v1/outbox``, role admin); else ``queued`` until the
  sender (``faucet_service.sender``) moves it to ``sent`` or, out of attempts, ``failed``
  (only ``services.outbox`` changes the state). A sent or failed message's body is
  blanked: the code is not kept once it is out of the queue.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Identity,
    Index,
    Integer,
    String,
    Text,
    func,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "FaucetBase",
    "GrantModel",
    "MintState",
    "OutboxMessageModel",
    "OutboxState",
    "RateLimitHitModel",
    "RefillModel",
    "SignInCodeModel",
    "VerificationModel",
]


class FaucetBase(DeclarativeBase):
    """Declarative base of faucet_service's tables."""


class MintState:
    """A grant or refill: recorded (``pending``), then minted by credit_service."""

    PENDING = "pending"
    MINTED = "minted"


class VerificationModel(FaucetBase):
    """The current verification code of one email (HMAC only) and its wrong tries."""

    __tablename__ = "verifications"
    __table_args__ = (CheckConstraint("failed_attempts >= 0", name="failed_attempts_not_negative"),)

    email: Mapped[str] = mapped_column(String(254), primary_key=True)
    recipient: Mapped[str | None] = mapped_column(String(254), default=None)
    user_id: Mapped[str] = mapped_column(String(128))
    code_hash: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    failed_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    verified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class SignInCodeModel(FaucetBase):
    """The current sign-in code of one mailbox (HMAC only): single use, few tries."""

    __tablename__ = "sign_in_codes"
    __table_args__ = (
        CheckConstraint("failed_attempts >= 0", name="sign_in_failed_attempts_not_negative"),
    )

    email: Mapped[str] = mapped_column(String(254), primary_key=True)
    recipient: Mapped[str] = mapped_column(String(254))
    user_id: Mapped[str] = mapped_column(String(128))
    code_hash: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    failed_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class GrantModel(FaucetBase):
    """The onboarding grant: once per email, once per user."""

    __tablename__ = "grants"
    __table_args__ = (
        CheckConstraint("amount > 0", name="amount_positive"),
        CheckConstraint("state IN ('pending', 'minted')", name="state_known"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    user_id: Mapped[str] = mapped_column(String(128), unique=True)
    amount: Mapped[int] = mapped_column(BigInteger)
    idempotency_key: Mapped[str] = mapped_column(String(200), unique=True)
    state: Mapped[str] = mapped_column(String(16), default=MintState.PENDING)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    minted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class RefillModel(FaucetBase):
    """One refill of a user's account."""

    __tablename__ = "refills"
    __table_args__ = (
        CheckConstraint("amount > 0", name="amount_positive"),
        CheckConstraint("state IN ('pending', 'minted')", name="state_known"),
        Index("ix_refills_user_id_created_at", "user_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128))
    amount: Mapped[int] = mapped_column(BigInteger)
    idempotency_key: Mapped[str] = mapped_column(String(200), unique=True)
    state: Mapped[str] = mapped_column(String(16), default=MintState.PENDING)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    minted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class RateLimitHitModel(FaucetBase):
    """One counted request of a rate-limited ``scope`` (e.g. ``signup_email``) for ``subject``."""

    __tablename__ = "rate_limit_hits"
    __table_args__ = (Index("ix_rate_limit_hits_scope_subject_at", "scope", "subject", "at"),)

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    scope: Mapped[str] = mapped_column(String(32))
    subject: Mapped[str] = mapped_column(String(254))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class OutboxState:
    """Where an outbox message stands."""

    KEPT = "kept"  # no SMTP server: kept for the operator
    QUEUED = "queued"  # the sender will (try to) send it
    SENT = "sent"
    FAILED = "failed"  # out of attempts


class OutboxMessageModel(FaucetBase):
    """A verification email: kept for the operator, or queued for the SMTP sender."""

    __tablename__ = "outbox_messages"
    __table_args__ = (
        CheckConstraint("state IN ('kept', 'queued', 'sent', 'failed')", name="outbox_state_known"),
        Index("ix_outbox_messages_recipient_id", "recipient", "id"),
        Index(
            "ix_outbox_messages_queued",
            "next_attempt_at",
            "id",
            postgresql_where="state = 'queued'",
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    recipient: Mapped[str] = mapped_column(String(254))
    subject: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default=OutboxState.KEPT, server_default="kept")
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # when the sender may next try; while an attempt is in flight, the end of its lease
    next_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    last_error: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
