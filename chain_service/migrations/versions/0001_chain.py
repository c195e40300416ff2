"""Receipts (append-only hash chain) and batches (Merkle roots, signed, anchored later).

Revision ID: 0001_chain
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001_chain"
down_revision = None
branch_labels = None
depends_on = None

_HEX64 = "'^[0-9a-f]{64}$'"
_SEALED_BATCH_COLUMNS = (
    "batch_id, first_seq, last_seq, leaf_count, root, last_hash, signature, public_key, created_at"
)


def upgrade() -> None:
    """Create ``receipts`` and ``batches`` with their constraints and append-only triggers."""
    op.create_table(
        "receipts",
        sa.Column("seq", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("subject_id", sa.String(200), nullable=False),
        sa.Column("hold_reference", sa.String(200), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("owner_id", sa.String(128), nullable=False),
        sa.Column("node", sa.String(253), nullable=False),
        sa.Column("vendor", sa.String(32), nullable=False),
        sa.Column("gpu_model", sa.String(200), nullable=True),
        sa.Column("gpu_count", sa.SmallInteger(), nullable=False),
        sa.Column("vram_mb", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("wall_microseconds", sa.BigInteger(), nullable=False),
        sa.Column("billed_seconds", sa.BigInteger(), nullable=False),
        sa.Column("price_per_gpu_second", sa.BigInteger(), nullable=False),
        sa.Column("cost", sa.BigInteger(), nullable=False),
        sa.Column("charged", sa.BigInteger(), nullable=False),
        sa.Column("settled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("result_ref_sha256", sa.String(64), nullable=True),
        sa.Column(
            "recorded_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.UniqueConstraint("hold_reference", name="uq_receipts_hold_reference"),
        sa.UniqueConstraint("prev_hash", name="uq_receipts_prev_hash"),
        sa.UniqueConstraint("hash", name="uq_receipts_hash"),
        sa.CheckConstraint("seq >= 1", name="seq_positive"),
        sa.CheckConstraint(f"prev_hash ~ {_HEX64} AND hash ~ {_HEX64}", name="hashes_hex"),
        sa.CheckConstraint(
            "(seq = 1) = (prev_hash = repeat('0', 64))", name="only_the_first_follows_genesis"
        ),
    )
    op.create_index("ix_receipts_subject_id", "receipts", ["subject_id"])
    op.create_table(
        "batches",
        sa.Column("batch_id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("first_seq", sa.BigInteger(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("leaf_count", sa.Integer(), nullable=False),
        sa.Column("root", sa.String(64), nullable=False),
        sa.Column("last_hash", sa.String(64), nullable=False),
        sa.Column("signature", sa.String(128), nullable=False),
        sa.Column("public_key", sa.String(64), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column("anchor_chain_id", sa.String(64), nullable=True),
        sa.Column("anchor_height", sa.BigInteger(), nullable=True),
        sa.Column("anchor_tx_hash", sa.String(64), nullable=True),
        sa.Column("anchor_proof", postgresql.JSONB(), nullable=True),
        sa.Column("anchored_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("first_seq", name="uq_batches_first_seq"),
        sa.UniqueConstraint("last_seq", name="uq_batches_last_seq"),
        sa.CheckConstraint("first_seq >= 1 AND first_seq <= last_seq", name="seq_range"),
        sa.CheckConstraint("leaf_count = last_seq - first_seq + 1", name="leaf_count_matches"),
        sa.CheckConstraint(f"root ~ {_HEX64} AND last_hash ~ {_HEX64}", name="hashes_hex"),
    )
    op.execute(
        """
        CREATE FUNCTION chain_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'chain rows are append-only: % on % refused', TG_OP, TG_TABLE_NAME
                USING ERRCODE = 'integrity_constraint_violation';
        END
        $$
        """
    )
    op.execute(
        "CREATE TRIGGER receipts_append_only BEFORE UPDATE OR DELETE ON receipts "
        "FOR EACH ROW EXECUTE FUNCTION chain_refuse_change()"
    )
    op.execute(
        f"CREATE TRIGGER batches_sealed BEFORE DELETE OR UPDATE OF {_SEALED_BATCH_COLUMNS} "
        "ON batches FOR EACH ROW EXECUTE FUNCTION chain_refuse_change()"
    )
    op.execute(
        "CREATE TRIGGER receipts_no_truncate BEFORE TRUNCATE ON receipts "
        "FOR EACH STATEMENT EXECUTE FUNCTION chain_refuse_change()"
    )
    op.execute(
        "CREATE TRIGGER batches_no_truncate BEFORE TRUNCATE ON batches "
        "FOR EACH STATEMENT EXECUTE FUNCTION chain_refuse_change()"
    )


def downgrade() -> None:
    """Drop the chain tables and the trigger function."""
    op.drop_table("batches")
    op.drop_table("receipts")
    op.execute("DROP FUNCTION chain_refuse_change()")
