"""The books checked: every account's figures against its ledger and its open holds.

Two invariants hold after every committed operation, since one database function changes a
balance and appends its ledger entry together (``ledger_apply_posting``) and a hold moves
``held`` in the same transaction that opens or closes it:

- ``balance`` equals the sum of the account's ledger entries, and the last entry's
  ``balance_after``;
- ``held`` equals the sum of the account's open holds.

One statement reads every account, so the figures come from one snapshot. An account that
breaks either is answered with all its figures; none should ever be.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

from gridweave_clients.credit.models import AccountOutOfBalance, BooksResponse

__all__ = ["check_books"]

_BOOKS = text(
    """
    WITH figures AS (
        SELECT a.user_id, a.balance, a.held,
               (SELECT COALESCE(SUM(e.amount), 0) FROM ledger_entries e
                 WHERE e.account_id = a.id) AS ledger_total,
               (SELECT e.balance_after FROM ledger_entries e
                 WHERE e.account_id = a.id ORDER BY e.id DESC LIMIT 1) AS last_balance_after,
               (SELECT COALESCE(SUM(h.amount), 0) FROM holds h
                 WHERE h.account_id = a.id AND h.status = 'open') AS open_held,
               (SELECT COUNT(*) FROM holds h
                 WHERE h.account_id = a.id AND h.status = 'open') AS open_holds
          FROM accounts a
    )
    SELECT user_id, balance, held, ledger_total, last_balance_after, open_held, open_holds,
           (balance <> ledger_total OR balance <> COALESCE(last_balance_after, 0)
            OR held <> open_held) AS out_of_balance
      FROM figures
     ORDER BY user_id
    """
)


def check_books(session: Session) -> BooksResponse:
    """Every account checked against its ledger and its open holds, in one snapshot."""
    rows = session.execute(_BOOKS).all()
    broken = [
        AccountOutOfBalance(
            user_id=row.user_id,
            balance=row.balance,
            ledger_total=int(row.ledger_total),  # SUM of BIGINT is NUMERIC
            last_balance_after=row.last_balance_after,
            held=row.held,
            open_held=int(row.open_held),
        )
        for row in rows
        if row.out_of_balance
    ]
    return BooksResponse(
        accounts=len(rows),
        open_holds=sum(int(row.open_holds) for row in rows),
        open_held=sum(int(row.open_held) for row in rows),
        out_of_balance=broken,
    )
