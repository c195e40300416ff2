"""A dashboard session signed in with an email code has no API key: web_sessions.key_id NULL.

Revision ID: 0005_email_sessions
Revises: 0004_web_sessions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_email_sessions"
down_revision = "0004_web_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Let web_sessions.key_id be NULL."""
    op.alter_column("web_sessions", "key_id", existing_type=sa.String(32), nullable=True)


def downgrade() -> None:
    """End the sessions without a key, then require one again."""
    op.execute("DELETE FROM web_sessions WHERE key_id IS NULL")
    op.alter_column("web_sessions", "key_id", existing_type=sa.String(32), nullable=False)
