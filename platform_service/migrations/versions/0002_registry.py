"""The image registry's quotas and per-user blob sizes.

Revision ID: 0002_registry
Revises: 0001_platform
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_registry"
down_revision = "0001_platform"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create registry_quotas and registry_blobs."""
    op.create_table(
        "registry_quotas",
        sa.Column("user_id", sa.String(128), sa.ForeignKey("users.id"), primary_key=True),
        sa.Column("quota_bytes", sa.BigInteger(), nullable=False),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.CheckConstraint("quota_bytes >= 0", name="quota_not_negative"),
    )
    op.create_table(
        "registry_blobs",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("digest", sa.String(160), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "digest"),
        sa.CheckConstraint("size_bytes >= 0", name="size_not_negative"),
    )


def downgrade() -> None:
    """Drop them."""
    op.drop_table("registry_blobs")
    op.drop_table("registry_quotas")
