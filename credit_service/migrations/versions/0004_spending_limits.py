"""Spending limits: a monthly and a per-job cap per account, the user's and the admin's.

- ``accounts.monthly_cap``, ``accounts.per_job_cap``: the user's own caps;
  ``accounts.admin_monthly_cap``, ``accounts.admin_per_job_cap``: an admin's, which the user
  cannot raise. NULL: no cap. The cap in force is the lower of the two.
- A partial index over the spending entries (``deduct``, ``capture``, ``settlement``) by
  account and time, carrying the amount, so the month's spending that a capped hold's
  placement sums is an index-only range scan.

Revision ID: 0004_spending_limits
Revises: 0003_limits_and_namespaces
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_spending_limits"
down_revision = "0003_limits_and_namespaces"
branch_labels = None
depends_on = None

_CAPS = ("monthly_cap", "per_job_cap", "admin_monthly_cap", "admin_per_job_cap")


def upgrade() -> None:
    """Add the four caps and the spending index."""
    for cap in _CAPS:
        op.add_column("accounts", sa.Column(cap, sa.BigInteger(), nullable=True))
        op.create_check_constraint(f"{cap}_not_negative", "accounts", f"{cap} >= 0")
    op.execute(
        "CREATE INDEX ix_ledger_entries_spending ON ledger_entries (account_id, created_at)"
        " INCLUDE (amount) WHERE kind IN ('deduct', 'capture', 'settlement')"
    )


def downgrade() -> None:
    """Drop the spending index and the caps."""
    op.execute("DROP INDEX ix_ledger_entries_spending")
    for cap in reversed(_CAPS):
        op.drop_constraint(f"{cap}_not_negative", "accounts", type_="check")
        op.drop_column("accounts", cap)
