"""Sign-in codes of existing users: one row per mailbox, single use.

Revision ID: 0003_sign_in_codes
Revises: 0002_mailboxes_and_sending
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_sign_in_codes"
down_revision = "0002_mailboxes_and_sending"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``sign_in_codes``."""
    op.create_table(
        "sign_in_codes",
        sa.Column("email", sa.String(254), primary_key=True),
        sa.Column("recipient", sa.String(254), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("failed_attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.CheckConstraint("failed_attempts >= 0", name="sign_in_failed_attempts_not_negative"),
    )


def downgrade() -> None:
    """Drop ``sign_in_codes``."""
    op.drop_table("sign_in_codes")
