"""Accounts, append-only ledger entries, holds and idempotency operations.

Revision ID: 0001_ledger
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001_ledger"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the ledger's tables, constraints and the append-only trigger."""
    op.create_table(
        "accounts",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False, unique=True),
        sa.Column("balance", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("held", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.CheckConstraint("balance >= 0", name="balance_not_negative"),
        sa.CheckConstraint("held >= 0", name="held_not_negative"),
        sa.CheckConstraint("held <= balance", name="held_within_balance"),
    )
    op.create_table(
        "holds",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("account_id", sa.BigInteger(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("captured", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reference", sa.String(200), nullable=True, unique=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("amount > 0", name="amount_positive"),
        sa.CheckConstraint("captured >= 0 AND captured <= amount", name="captured_within_amount"),
        sa.CheckConstraint("status IN ('open', 'captured', 'released')", name="status_known"),
    )
    op.create_index(
        "ix_holds_account_id_open",
        "holds",
        ["account_id"],
        postgresql_where=sa.text("status = 'open'"),
    )
    op.create_table(
        "ledger_entries",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("account_id", sa.BigInteger(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("balance_after", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("operation_key", sa.String(200), nullable=False),
        sa.Column("hold_id", sa.BigInteger(), sa.ForeignKey("holds.id"), nullable=True),
        sa.Column(
            "counterparty_account_id",
            sa.BigInteger(),
            sa.ForeignKey("accounts.id"),
            nullable=True,
        ),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.CheckConstraint("amount <> 0", name="amount_not_zero"),
        sa.CheckConstraint("balance_after >= 0", name="balance_after_not_negative"),
    )
    op.create_index("ix_ledger_entries_account_id_id", "ledger_entries", ["account_id", "id"])
    op.create_index("ix_ledger_entries_operation_key", "ledger_entries", ["operation_key"])
    op.create_table(
        "operations",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("status_code", sa.SmallInteger(), nullable=False, server_default="200"),
        sa.Column("response", postgresql.JSONB(), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
    )
    # The ledger is append-only: no row is ever changed or removed, whoever asks.
    op.execute(
        """
        CREATE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'ledger_entries is append-only (% refused)', TG_OP;
        END
        $$
        """
    )
    op.execute(
        "CREATE TRIGGER ledger_entries_no_update_or_delete BEFORE UPDATE OR DELETE "
        "ON ledger_entries FOR EACH ROW EXECUTE FUNCTION ledger_entries_append_only()"
    )
    op.execute(
        "CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE "
        "ON ledger_entries FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_append_only()"
    )


def downgrade() -> None:
    """Drop everything (the ledger with it)."""
    op.drop_table("operations")
    op.drop_table("ledger_entries")
    op.drop_table("holds")
    op.drop_table("accounts")
    op.execute("DROP FUNCTION ledger_entries_append_only()")
