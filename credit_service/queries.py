"""The hot-path SQL of credit_service, prepared once and run on the caller's connection.

Plain ``text()`` statements with explicit casts on the session's connection: building
Core/ORM constructs per call cost more Python time than PostgreSQL spent running them. The
settlement call runs on an async psycopg connection instead (see ``async_connections``).
Every function here runs inside the caller's transaction and never commits.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection
from sqlalchemy import Row, text
from sqlalchemy.orm import Session

__all__ = [
    "apply_posting",
    "claim_operation",
    "close_hold",
    "find_account",
    "find_operation",
    "insert_account",
    "insert_hold",
    "lock_account",
    "lock_hold_by_id",
    "read_month_spending",
    "read_spending_caps",
    "settle_hold",
    "store_operation_response",
    "write_spending_caps",
]

# An operation is named by (caller, kind, key): one caller's key never meets another's.
_OPERATION = (
    "caller = CAST(:caller AS varchar) AND kind = CAST(:kind AS varchar)"
    " AND key = CAST(:key AS varchar)"
)
_CLAIM_OPERATION = text(
    "INSERT INTO operations (caller, kind, key, fingerprint)"
    " VALUES (CAST(:caller AS varchar), CAST(:kind AS varchar), CAST(:key AS varchar),"
    " CAST(:fingerprint AS varchar))"
    " ON CONFLICT (caller, kind, key) DO NOTHING RETURNING key"
)
_FIND_OPERATION = text(f"SELECT kind, fingerprint, response FROM operations WHERE {_OPERATION}")
_STORE_RESPONSE = text(
    f"UPDATE operations SET response = CAST(:response AS jsonb) WHERE {_OPERATION}"
)
_FIND_ACCOUNT = text(
    "SELECT id, user_id, balance, held FROM accounts WHERE user_id = CAST(:user_id AS varchar)"
)
_FIND_ACCOUNT_BY_ID = text(
    "SELECT id, user_id, balance, held FROM accounts WHERE id = CAST(:account_id AS bigint)"
)
# FOR NO KEY UPDATE: the lock a balance update takes. FOR UPDATE would also wait for the
# key-share locks that inserting a ledger entry takes on its account and counterparty rows
# (foreign keys), and two transfers crossing such locks deadlocked.
_LOCK_ACCOUNT = text(
    "SELECT id, user_id, balance, held FROM accounts WHERE id = CAST(:account_id AS bigint)"
    " FOR NO KEY UPDATE"
)
_INSERT_ACCOUNT = text(
    "INSERT INTO accounts (user_id) VALUES (CAST(:user_id AS varchar))"
    " ON CONFLICT (user_id) DO NOTHING"
)
# The posting is a database function (migration 0002), so the settlement function can
# call the very same code: one round trip per posting, no row back = refused or no account.
_APPLY_POSTING = text(
    "SELECT id, user_id, balance, held FROM ledger_apply_posting("
    "CAST(:account_id AS bigint), CAST(:amount AS bigint), CAST(:held AS bigint),"
    " CAST(:kind AS varchar), CAST(:operation_key AS varchar), CAST(:hold_id AS bigint),"
    " CAST(:counterparty_account_id AS bigint))"
)
# psycopg's own placeholders: this one runs on the event loop's connections, not a session
_SETTLE_HOLD = (
    "SELECT outcome, CAST(body AS text), account_id, hold_amount"
    " FROM settle_hold(%s::varchar, %s::varchar, %s::bigint, %s::varchar, %s::varchar)"
)
_HOLD_COLUMNS = "id, account_id, amount, captured, status, reference"
_LOCK_HOLD_BY_ID = text(
    f"SELECT {_HOLD_COLUMNS} FROM holds WHERE id = CAST(:hold_id AS bigint) FOR UPDATE"
)
_INSERT_HOLD = text(
    "INSERT INTO holds (account_id, amount, status, reference)"
    " VALUES (CAST(:account_id AS bigint), CAST(:amount AS bigint), 'open',"
    " CAST(:reference AS varchar))"
    " ON CONFLICT (reference) DO NOTHING RETURNING id"
)
_CLOSE_HOLD = text(
    "UPDATE holds SET captured = CAST(:captured AS bigint), status = CAST(:status AS varchar),"
    " closed_at = now() WHERE id = CAST(:hold_id AS bigint)"
)

# the caps of an account, each in force (PostgreSQL's LEAST skips NULLs: NULL only if both
# are) and each side's own
_SPENDING_CAPS = (
    "SELECT id, user_id, held, LEAST(monthly_cap, admin_monthly_cap) AS monthly_in_force,"
    " LEAST(per_job_cap, admin_per_job_cap) AS per_job_in_force,"
    " monthly_cap, per_job_cap, admin_monthly_cap, admin_per_job_cap"
    " FROM accounts WHERE id = CAST(:account_id AS bigint)"
)
_READ_SPENDING_CAPS = text(_SPENDING_CAPS)
_LOCK_SPENDING_CAPS = text(_SPENDING_CAPS + " FOR NO KEY UPDATE")
# what the account was charged since the first of this month, UTC (entries' created_at is
# their transaction's start), and that month's first instant
_MONTH_SPENDING = text(
    "WITH month AS (SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
    " AS start)"
    " SELECT month.start, COALESCE(-SUM(e.amount), 0) AS charged"
    " FROM month LEFT JOIN ledger_entries AS e"
    " ON e.account_id = CAST(:account_id AS bigint)"
    " AND e.kind IN ('deduct', 'capture', 'settlement') AND e.created_at >= month.start"
    " GROUP BY month.start"
)
_WRITE_SPENDING_CAPS = {
    side: text(
        f"UPDATE accounts SET {prefix}monthly_cap = CAST(:monthly_cap AS bigint),"
        f" {prefix}per_job_cap = CAST(:per_job_cap AS bigint)"
        " WHERE id = CAST(:account_id AS bigint)"
    )
    for side, prefix in (("user", ""), ("admin", "admin_"))
}


def _run(session: Session, statement: Any, params: dict[str, Any]) -> Any:
    return session.connection().execute(statement, params)


def claim_operation(
    session: Session, *, caller: str, kind: str, key: str, fingerprint: str
) -> bool:
    """Insert the operation row for ``key``; False if it exists (waits for its writer)."""
    params = {"caller": caller, "kind": kind, "key": key, "fingerprint": fingerprint}
    return _run(session, _CLAIM_OPERATION, params).first() is not None


def find_operation(session: Session, *, caller: str, kind: str, key: str) -> Row[Any] | None:
    """The (kind, fingerprint, response) recorded for ``key``."""
    params = {"caller": caller, "kind": kind, "key": key}
    row: Row[Any] | None = _run(session, _FIND_OPERATION, params).first()
    return row


def store_operation_response(
    session: Session, *, caller: str, kind: str, key: str, response_json: str
) -> None:
    """Record the answer given for ``key``."""
    params = {"caller": caller, "kind": kind, "key": key, "response": response_json}
    _run(session, _STORE_RESPONSE, params)


def find_account(
    session: Session, *, user_id: str | None = None, account_id: int | None = None
) -> Row[Any] | None:
    """(id, user_id, balance, held) of one account, by user or by id; not locked."""
    if account_id is not None:
        row: Row[Any] | None = _run(
            session, _FIND_ACCOUNT_BY_ID, {"account_id": account_id}
        ).first()
        return row
    row = _run(session, _FIND_ACCOUNT, {"user_id": user_id}).first()
    return row


def lock_account(session: Session, *, account_id: int) -> Row[Any] | None:
    """Lock and read one account by id."""
    row: Row[Any] | None = _run(session, _LOCK_ACCOUNT, {"account_id": account_id}).first()
    return row


def insert_account(session: Session, *, user_id: str) -> None:
    """Open an empty account for ``user_id`` unless one exists."""
    _run(session, _INSERT_ACCOUNT, {"user_id": user_id})


def apply_posting(session: Session, **params: Any) -> Row[Any] | None:
    """Run the posting statement (only ``ledger.move_money`` calls this)."""
    row: Row[Any] | None = _run(session, _APPLY_POSTING, params).first()
    return row


def lock_hold_by_id(session: Session, *, hold_id: int) -> Row[Any] | None:
    """Lock and read one hold by id."""
    row: Row[Any] | None = _run(session, _LOCK_HOLD_BY_ID, {"hold_id": hold_id}).first()
    return row


def insert_hold(
    session: Session, *, account_id: int, amount: int, reference: str | None
) -> int | None:
    """Insert an open hold; None when another hold already carries ``reference``."""
    params = {"account_id": account_id, "amount": amount, "reference": reference}
    hold_id: int | None = _run(session, _INSERT_HOLD, params).scalar()
    return hold_id


def close_hold(session: Session, *, hold_id: int, captured: int, status: str) -> None:
    """Mark a hold captured or released."""
    _run(session, _CLOSE_HOLD, {"hold_id": hold_id, "captured": captured, "status": status})


def read_spending_caps(session: Session, *, account_id: int, lock: bool) -> Row[Any] | None:
    """(id, user_id, held, monthly_in_force, per_job_in_force, and the four caps) of one account;
    locked with ``lock`` (the row lock a posting takes)."""
    statement = _LOCK_SPENDING_CAPS if lock else _READ_SPENDING_CAPS
    row: Row[Any] | None = _run(session, statement, {"account_id": account_id}).first()
    return row


def read_month_spending(session: Session, *, account_id: int) -> Row[Any]:
    """(start, charged): this month's first instant (UTC) and what was charged since."""
    row: Row[Any] = _run(session, _MONTH_SPENDING, {"account_id": account_id}).one()
    return row


def write_spending_caps(
    session: Session,
    *,
    account_id: int,
    side: str,
    monthly_cap: int | None,
    per_job_cap: int | None,
) -> None:
    """Replace the user's (``side='user'``) or the admin's (``'admin'``) two caps."""
    params = {"account_id": account_id, "monthly_cap": monthly_cap, "per_job_cap": per_job_cap}
    _run(session, _WRITE_SPENDING_CAPS[side], params)


async def settle_hold(
    connection: AsyncConnection,
    *,
    reference: str,
    user_id: str,
    amount: int,
    key: str,
    fingerprint: str,
) -> tuple[str, str, int | None, int | None]:
    """Run the settlement function (only ``ledger.settle_hold`` calls this).

    Returns (outcome, body as JSON text, account id, hold amount).
    """
    cursor = await connection.execute(
        _SETTLE_HOLD, (reference, user_id, amount, key, fingerprint), prepare=True
    )
    row = await cursor.fetchone()
    assert row is not None  # the function always returns one row
    return row[0], row[1], row[2], row[3]
