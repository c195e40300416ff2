"""The receipt outbox: each settled record's receipt, queued for chain_service.

Also the GPU model and the result reference's hash on the usage record (the receipt says
both). Records settled before this revision are queued too, so their receipts follow.

Revision ID: 0002_receipt_outbox
Revises: 0001_usage_records
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_receipt_outbox"
down_revision = "0001_usage_records"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the two record columns, create ``receipt_outbox`` and queue the settled records."""
    op.add_column("usage_records", sa.Column("gpu_model", sa.String(200), nullable=True))
    op.add_column("usage_records", sa.Column("result_ref_sha256", sa.String(64), nullable=True))
    op.create_table(
        "receipt_outbox",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("usage_id", sa.BigInteger(), sa.ForeignKey("usage_records.id"), nullable=False),
        sa.Column("state", sa.String(16), nullable=False, server_default="queued"),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column(
            "next_attempt_at",
            sa.DateTime(timezone=True),
            nullable=False,
            server_default=sa.func.now(),
        ),
        sa.Column("receipt_seq", sa.BigInteger(), nullable=True),
        sa.Column("last_error", sa.String(500), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.UniqueConstraint("usage_id", name="uq_receipt_outbox_usage_id"),
        sa.CheckConstraint(
            "state IN ('queued', 'delivered', 'refused')", name="receipt_state_known"
        ),
        sa.CheckConstraint(
            "(state = 'delivered') = (receipt_seq IS NOT NULL)", name="delivered_has_seq"
        ),
    )
    op.create_index(
        "ix_receipt_outbox_due",
        "receipt_outbox",
        ["next_attempt_at", "id"],
        postgresql_where=sa.text("state = 'queued'"),
    )
    op.execute(
        "INSERT INTO receipt_outbox (usage_id) SELECT id FROM usage_records "
        "WHERE settlement_state = 'settled' ORDER BY id"
    )


def downgrade() -> None:
    """Drop ``receipt_outbox`` and the two record columns."""
    op.drop_table("receipt_outbox")
    op.drop_column("usage_records", "result_ref_sha256")
    op.drop_column("usage_records", "gpu_model")
