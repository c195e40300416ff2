"""A node's CPU and memory.

Revision ID: 0002_node_capacity
Revises: 0001_node_registry
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_node_capacity"
down_revision = "0001_node_registry"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """``nodes.cpu_millis`` and ``nodes.memory_mb``: what the node's work may use (null: the
    node did not say, as every node joined before)."""
    op.add_column("nodes", sa.Column("cpu_millis", sa.BigInteger()))
    op.add_column("nodes", sa.Column("memory_mb", sa.BigInteger()))
    op.create_check_constraint(
        "cpu_millis_positive", "nodes", "cpu_millis IS NULL OR cpu_millis >= 1"
    )
    op.create_check_constraint("memory_mb_positive", "nodes", "memory_mb IS NULL OR memory_mb >= 1")


def downgrade() -> None:
    """Drop the node's CPU and memory."""
    op.drop_constraint("memory_mb_positive", "nodes")
    op.drop_constraint("cpu_millis_positive", "nodes")
    op.drop_column("nodes", "memory_mb")
    op.drop_column("nodes", "cpu_millis")
