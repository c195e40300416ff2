"""Repositories of the image registry shared with other users (pull).

Revision ID: 0003_registry_shares
Revises: 0002_registry
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_registry_shares"
down_revision = "0002_registry"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create registry_shares."""
    op.create_table(
        "registry_shares",
        sa.Column("repository", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(128), sa.ForeignKey("users.id"), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.PrimaryKeyConstraint("repository", "user_id"),
    )
    op.create_index("ix_registry_shares_user_id", "registry_shares", ["user_id"])


def downgrade() -> None:
    """Drop it."""
    op.drop_index("ix_registry_shares_user_id", table_name="registry_shares")
    op.drop_table("registry_shares")
