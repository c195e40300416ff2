"""Join keys and nodes.

Revision ID: 0001_node_registry
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001_node_registry"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``join_keys`` and ``nodes`` with their constraints."""
    op.create_table(
        "join_keys",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("description", sa.String(200), nullable=False, server_default=""),
        sa.Column("created_by", sa.String(200)),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("max_uses", sa.Integer(), nullable=False),
        sa.Column("uses", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("max_gpus", sa.Integer()),
        sa.Column("vendor", sa.String(16)),
        sa.Column("revoked_at", sa.DateTime(timezone=True)),
        sa.CheckConstraint("max_uses >= 1", name="max_uses_positive"),
        sa.CheckConstraint("uses >= 0 AND uses <= max_uses", name="uses_within_max"),
        sa.CheckConstraint("max_gpus IS NULL OR max_gpus >= 1", name="max_gpus_positive"),
    )
    op.create_table(
        "nodes",
        sa.Column("name", sa.String(253), primary_key=True),
        sa.Column("join_key_id", sa.String(32), sa.ForeignKey("join_keys.id"), nullable=False),
        sa.Column("wireguard_public_key", sa.String(44), nullable=False, unique=True),
        sa.Column("vpn_ip", sa.String(45), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("gpus", postgresql.JSONB(), nullable=False),
        sa.Column("labels", postgresql.JSONB(), nullable=False, server_default="{}"),
        sa.Column("cordoned", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("validated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True)),
        sa.Column("last_heartbeat_at", sa.DateTime(timezone=True)),
    )


def downgrade() -> None:
    """Drop the node registry's tables."""
    op.drop_table("nodes")
    op.drop_table("join_keys")
