"""Per-user quotas and fair-share weights set by admins: user_limits.

Revision ID: 0006_user_limits
Revises: 0005_email_sessions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_user_limits"
down_revision = "0005_email_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create user_limits."""
    op.create_table(
        "user_limits",
        sa.Column("user_id", sa.String(128), sa.ForeignKey("users.id"), primary_key=True),
        sa.Column("max_gpus", sa.Integer(), nullable=True),
        sa.Column("max_vram_mb", sa.BigInteger(), nullable=True),
        sa.Column("share_weight", sa.Float(), nullable=True),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.CheckConstraint("max_gpus IS NULL OR max_gpus >= 0", name="max_gpus_not_negative"),
        sa.CheckConstraint("max_vram_mb IS NULL OR max_vram_mb >= 0", name="max_vram_not_negative"),
        sa.CheckConstraint(
            "share_weight IS NULL OR share_weight > 0", name="share_weight_positive"
        ),
    )


def downgrade() -> None:
    """Drop it."""
    op.drop_table("user_limits")
