"""The one function that moves money, and the account look-ups it needs.

Every mint, deduct, transfer, hold, capture and release is a list of :class:`Posting`\\s
given to :func:`move_money`. For each posting, in account-id order, one statement locks the
account row (a conditional ``UPDATE``, which takes the row lock
``SELECT ... FOR NO KEY UPDATE`` takes), checks that the balance stays >= 0 and >= the held money,
applies the change and appends the ledger entry. Nothing is committed here: the calling
service commits, so a failure anywhere rolls every posting back.

The posting itself is the database function ``ledger_apply_posting`` (migration 0002), so
that :func:`settle_hold`, which runs a whole settlement in one database call, posts through
the very same statement.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection
from sqlalchemy import Row
from sqlalchemy.orm import Session

from credit_service import queries
from credit_service.errors import (
    AccountNotFound,
    BalanceLimitExceeded,
    CaptureExceedsHold,
    CreditError,
    HoldNotFound,
    HoldNotOpen,
    HoldOwnerMismatch,
    IdempotencyConflict,
    InsufficientFunds,
)
from gridweave_clients.credit.models import MAX_BALANCE, AccountResponse

__all__ = [
    "AccountState",
    "Posting",
    "account_response",
    "ensure_account",
    "get_account",
    "move_money",
    "settle_hold",
]

# what settle_hold's outcome codes mean; the function returns each one's details as JSON
_SETTLEMENT_REFUSALS: dict[str, type[CreditError]] = {
    "hold_not_found": HoldNotFound,
    "hold_not_open": HoldNotOpen,
    "hold_owner_mismatch": HoldOwnerMismatch,
    "capture_exceeds_hold": CaptureExceedsHold,
    "idempotency_conflict": IdempotencyConflict,
    "insufficient_funds": InsufficientFunds,
}


@dataclass(frozen=True)
class Posting:
    """One change to one account: ``amount`` to its balance, ``held`` to its held money."""

    account_id: int
    amount: int = 0
    held: int = 0
    counterparty_account_id: int | None = None


@dataclass(frozen=True)
class AccountState:
    """An account's balances right after a posting."""

    id: int
    user_id: str
    balance: int
    held: int


def account_response(account: AccountState) -> AccountResponse:
    """Convert an account's state to its API body."""
    return AccountResponse(
        user_id=account.user_id,
        balance=account.balance,
        held=account.held,
        available=account.balance - account.held,
    )


def get_account(session: Session, user_id: str) -> AccountState:
    """The account of ``user_id`` (not locked); raises AccountNotFound."""
    row = queries.find_account(session, user_id=user_id)
    if row is None:
        raise AccountNotFound(user_id=user_id)
    return AccountState(id=row.id, user_id=row.user_id, balance=row.balance, held=row.held)


def ensure_account(session: Session, user_id: str) -> AccountState:
    """The account of ``user_id``, created empty if missing (safe under concurrency)."""
    queries.insert_account(session, user_id=user_id)
    return get_account(session, user_id)


def _after_posting(posting: Posting, operation_key: str) -> None:
    """Runs after each posting is written; a seam where tests inject a failure mid-operation."""


def move_money(
    session: Session,
    postings: Sequence[Posting],
    *,
    kind: str,
    operation_key: str,
    hold_id: int | None = None,
) -> dict[int, AccountState]:
    """Apply ``postings`` atomically under row locks; return each account's state after.

    Postings are applied in account-id order, so concurrent operations over the same
    accounts take their row locks in the same order and cannot deadlock.

    Raises:
        InsufficientFunds: a balance would go negative or below its held money.
        BalanceLimitExceeded: a balance would pass ``MAX_BALANCE``.
        AccountNotFound: a posting names an account that does not exist.
    """
    states: dict[int, AccountState] = {}
    for posting in sorted(postings, key=lambda item: item.account_id):
        params = {
            "account_id": posting.account_id,
            "amount": posting.amount,
            "held": posting.held,
            "kind": kind,
            "operation_key": operation_key,
            "hold_id": hold_id,
            "counterparty_account_id": posting.counterparty_account_id,
        }
        row = queries.apply_posting(session, **params)
        if row is None:
            row = _decide_under_lock(session, posting, params)
        states[posting.account_id] = AccountState(
            id=row.id, user_id=row.user_id, balance=row.balance, held=row.held
        )
        _after_posting(posting, operation_key)
    return states


async def settle_hold(
    connection: AsyncConnection,
    *,
    reference: str,
    user_id: str,
    amount: int,
    operation_key: str,
    fingerprint: str,
) -> tuple[str, bool]:
    """Capture ``amount`` of ``user_id``'s hold carrying ``reference``; (answer JSON, replayed).

    One database call claims ``operation_key``, locks the hold, checks it is ``user_id``'s,
    posts the capture (held money released, ``amount`` charged) through
    ``ledger_apply_posting``, closes the hold and stores the answer; a replay returns the
    stored answer. Nothing is committed here.

    Raises:
        HoldNotFound, HoldOwnerMismatch, HoldNotOpen, CaptureExceedsHold, IdempotencyConflict:
            refused; the caller's rollback undoes the claim.
        InsufficientFunds: the account no longer covers the hold (a broken invariant).
    """
    outcome, body, account_id, hold_amount = await queries.settle_hold(
        connection,
        reference=reference,
        user_id=user_id,
        amount=amount,
        key=operation_key,
        fingerprint=fingerprint,
    )
    if outcome == "settled":
        assert account_id is not None and hold_amount is not None
        _after_posting(Posting(account_id, amount=-amount, held=-hold_amount), operation_key)
        return body, False
    if outcome == "replayed":
        return body, True
    raise _SETTLEMENT_REFUSALS[outcome](**json.loads(body))


def _decide_under_lock(session: Session, posting: Posting, params: dict[str, Any]) -> Row[Any]:
    """Post again on the locked row, or refuse with that row's figures.

    The conditional update saw the row as it was then; a transaction that committed since
    may have freed money. Locking the row first means the figures a 402 reports are
    exactly the ones the refusal was decided on.

    Raises:
        InsufficientFunds: the locked row cannot cover the posting.
        BalanceLimitExceeded: the posting would take the balance past ``MAX_BALANCE``.
        AccountNotFound: no such account.
    """
    account = queries.lock_account(session, account_id=posting.account_id)
    if account is None:
        raise AccountNotFound(account_id=posting.account_id)
    row = queries.apply_posting(session, **params)
    if row is not None:
        return row
    if account.balance + posting.amount > MAX_BALANCE:
        raise BalanceLimitExceeded(
            user_id=account.user_id,
            balance=account.balance,
            amount=posting.amount,
            max_balance=MAX_BALANCE,
        )
    raise InsufficientFunds(
        user_id=account.user_id,
        balance=account.balance,
        held=account.held,
        available=account.balance - account.held,
        needed=max(-posting.amount, 0) + max(posting.held, 0),
    )
