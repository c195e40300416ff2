"""The dashboard's sessions, and when each API key was last used.

Revision ID: 0004_web_sessions
Revises: 0003_registry_shares
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_web_sessions"
down_revision = "0003_registry_shares"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create web_sessions; add api_keys.last_used_at."""
    op.add_column("api_keys", sa.Column("last_used_at", sa.DateTime(timezone=True)))
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("csrf_hash", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(128), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_web_sessions_user_id", "web_sessions", ["user_id"])


def downgrade() -> None:
    """Drop them."""
    op.drop_index("ix_web_sessions_user_id", table_name="web_sessions")
    op.drop_table("web_sessions")
    op.drop_column("api_keys", "last_used_at")
