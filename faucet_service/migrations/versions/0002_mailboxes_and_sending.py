"""Codes sent to the address as typed, counted per mailbox; an outbox that is a mail queue.

- ``verifications.recipient``: the address the code was sent to; ``email`` (the key) is now
  the canonical mailbox (``faucet_service.mailboxes``). Rows written before keep ``email``
  as typed and no recipient (their code went to ``email``).
- ``outbox_messages`` gets a delivery state: ``kept`` (no SMTP server: the operator reads
  it), ``queued`` (the sender will send it), ``sent``, ``failed``; with ``attempts``,
  ``next_attempt_at`` (also the lease of the attempt in flight), ``sent_at`` and
  ``last_error``. Earlier rows are ``kept``.

Revision ID: 0002_mailboxes_and_sending
Revises: 0001_faucet
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_mailboxes_and_sending"
down_revision = "0001_faucet"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the recipient of a code and the outbox's delivery columns."""
    op.add_column("verifications", sa.Column("recipient", sa.String(254), nullable=True))
    op.add_column(
        "outbox_messages",
        sa.Column("state", sa.String(16), nullable=False, server_default="kept"),
    )
    op.add_column(
        "outbox_messages",
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
    )
    for name in ("next_attempt_at", "sent_at"):
        op.add_column("outbox_messages", sa.Column(name, sa.DateTime(timezone=True), nullable=True))
    op.add_column("outbox_messages", sa.Column("last_error", sa.String(200), nullable=True))
    op.create_check_constraint(
        "outbox_state_known", "outbox_messages", "state IN ('kept', 'queued', 'sent', 'failed')"
    )
    op.create_index(
        "ix_outbox_messages_queued",
        "outbox_messages",
        ["next_attempt_at", "id"],
        postgresql_where=sa.text("state = 'queued'"),
    )


def downgrade() -> None:
    """Drop them again."""
    op.drop_index("ix_outbox_messages_queued", table_name="outbox_messages")
    op.drop_constraint("outbox_state_known", "outbox_messages", type_="check")
    for name in ("last_error", "sent_at", "next_attempt_at", "attempts", "state"):
        op.drop_column("outbox_messages", name)
    op.drop_column("verifications", "recipient")
