"""Usage records with their cost and settlement state.

Revision ID: 0001_usage_records
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001_usage_records"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``usage_records`` and its indexes."""
    op.create_table(
        "usage_records",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("subject_id", sa.String(200), nullable=False),
        sa.Column("hold_reference", sa.String(200), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("owner_id", sa.String(128), nullable=False),
        sa.Column("node", sa.String(253), nullable=False),
        sa.Column("gpu_indices", postgresql.ARRAY(sa.Integer()), nullable=False),
        sa.Column("vendor", sa.String(32), nullable=False),
        sa.Column("vram_mb", sa.Integer(), nullable=False),
        sa.Column("gpu_count", sa.SmallInteger(), nullable=False),
        sa.Column("wall_seconds", sa.Double(), nullable=False),
        sa.Column("billed_seconds", sa.BigInteger(), nullable=False),
        sa.Column("price_per_gpu_second", sa.BigInteger(), nullable=False),
        sa.Column("cost", sa.BigInteger(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("settlement_state", sa.String(16), nullable=False),
        sa.Column("settlement_amount", sa.BigInteger(), nullable=False),
        sa.Column("settlement_attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("settlement_error_code", sa.String(64), nullable=True),
        sa.Column("settlement_error", sa.String(500), nullable=True),
        sa.Column("charged", sa.BigInteger(), nullable=True),
        sa.Column("hold_id", sa.BigInteger(), nullable=True),
        sa.Column("settled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.UniqueConstraint("hold_reference", name="uq_usage_records_hold_reference"),
        sa.CheckConstraint("kind IN ('job', 'endpoint')", name="kind_known"),
        sa.CheckConstraint("wall_seconds >= 0", name="wall_seconds_not_negative"),
        sa.CheckConstraint("billed_seconds >= 0", name="billed_seconds_not_negative"),
        sa.CheckConstraint("gpu_count >= 1", name="gpu_count_positive"),
        sa.CheckConstraint("cost >= 0", name="cost_not_negative"),
        sa.CheckConstraint(
            "settlement_amount >= 0 AND settlement_amount <= cost", name="settlement_within_cost"
        ),
        sa.CheckConstraint(
            "settlement_state IN ('pending', 'settled', 'refused')", name="settlement_state_known"
        ),
    )
    op.create_index(
        "ix_usage_records_user_id_finished_at", "usage_records", ["user_id", "finished_at"]
    )
    op.create_index("ix_usage_records_kind_subject_id", "usage_records", ["kind", "subject_id"])
    op.create_index(
        "ix_usage_records_unsettled",
        "usage_records",
        ["id"],
        postgresql_where=sa.text("settlement_state <> 'settled'"),
    )


def downgrade() -> None:
    """Drop ``usage_records``."""
    op.drop_table("usage_records")
