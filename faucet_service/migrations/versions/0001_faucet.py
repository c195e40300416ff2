"""Verifications, grants, refills, rate-limit hits and the outbox.

Revision ID: 0001_faucet
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_faucet"
down_revision = None
branch_labels = None
depends_on = None


def _timestamp(name: str, *, nullable: bool = False, default: bool = False) -> sa.Column[object]:
    return sa.Column(
        name,
        sa.DateTime(timezone=True),
        nullable=nullable,
        server_default=sa.func.now() if default else None,
    )


def upgrade() -> None:
    """Create the faucet's tables."""
    op.create_table(
        "verifications",
        sa.Column("email", sa.String(254), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("code_hash", sa.String(64), nullable=False),
        _timestamp("expires_at"),
        sa.Column("failed_attempts", sa.Integer(), nullable=False, server_default="0"),
        _timestamp("verified_at", nullable=True),
        _timestamp("created_at", default=True),
        sa.CheckConstraint("failed_attempts >= 0", name="failed_attempts_not_negative"),
    )
    op.create_table(
        "grants",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("email", sa.String(254), nullable=False, unique=True),
        sa.Column("user_id", sa.String(128), nullable=False, unique=True),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=False, unique=True),
        sa.Column("state", sa.String(16), nullable=False),
        _timestamp("created_at", default=True),
        _timestamp("minted_at", nullable=True),
        sa.CheckConstraint("amount > 0", name="amount_positive"),
        sa.CheckConstraint("state IN ('pending', 'minted')", name="state_known"),
    )
    op.create_table(
        "refills",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=False, unique=True),
        sa.Column("state", sa.String(16), nullable=False),
        _timestamp("created_at", default=True),
        _timestamp("minted_at", nullable=True),
        sa.CheckConstraint("amount > 0", name="amount_positive"),
        sa.CheckConstraint("state IN ('pending', 'minted')", name="state_known"),
    )
    op.create_index("ix_refills_user_id_created_at", "refills", ["user_id", "created_at"])
    op.create_table(
        "rate_limit_hits",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("scope", sa.String(32), nullable=False),
        sa.Column("subject", sa.String(254), nullable=False),
        _timestamp("at"),
    )
    op.create_index(
        "ix_rate_limit_hits_scope_subject_at", "rate_limit_hits", ["scope", "subject", "at"]
    )
    op.create_table(
        "outbox_messages",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("recipient", sa.String(254), nullable=False),
        sa.Column("subject", sa.String(200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        _timestamp("created_at", default=True),
    )
    op.create_index("ix_outbox_messages_recipient_id", "outbox_messages", ["recipient", "id"])


def downgrade() -> None:
    """Drop the faucet's tables."""
    for table in ("outbox_messages", "rate_limit_hits", "refills", "grants", "verifications"):
        op.drop_table(table)
