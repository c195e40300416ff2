"""The one function that moves money, and the account look-ups it needs.

Every mint, deduct, transfer, hold, capture and release is a list of :class:`Posting`\\s
given to :func:`move_money`. It locks the accounts (``SELECT ... FOR UPDATE`` in id order,
so two transfers between the same accounts can never deadlock), checks that no balance
goes negative and no hold exceeds its balance, applies each posting and writes a ledger
entry for each change to a balance. It flushes; the calling service commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from credit_service.errors import AccountNotFound, InsufficientFunds
from credit_service.models import AccountModel, LedgerEntryModel
from credit_service.schemas.accounts import AccountResponse

__all__ = [
    "Posting",
    "account_response",
    "ensure_account",
    "get_account",
    "move_money",
]


@dataclass(frozen=True)
class Posting:
    """One change to one account: ``amount`` to its balance, ``held`` to its held money."""

    account_id: int
    amount: int = 0
    held: int = 0
    counterparty_account_id: int | None = None


def account_response(account: AccountModel) -> AccountResponse:
    """Convert an account row to its API body."""
    return AccountResponse(
        user_id=account.user_id,
        balance=account.balance,
        held=account.held,
        available=account.balance - account.held,
    )


def get_account(session: Session, user_id: str) -> AccountModel:
    """The account of ``user_id`` (not locked); raises AccountNotFound."""
    account = session.scalar(select(AccountModel).where(AccountModel.user_id == user_id))
    if account is None:
        raise AccountNotFound(user_id=user_id)
    return account


def ensure_account(session: Session, user_id: str) -> AccountModel:
    """The account of ``user_id``, created empty if missing (safe under concurrency)."""
    session.execute(
        insert(AccountModel)
        .values(user_id=user_id)
        .on_conflict_do_nothing(index_elements=["user_id"])
    )
    return get_account(session, user_id)


def _after_posting(posting: Posting, operation_key: str) -> None:
    """Runs after each posting is flushed; a seam where tests inject a failure mid-operation."""


def move_money(
    session: Session,
    postings: Sequence[Posting],
    *,
    kind: str,
    operation_key: str,
    hold_id: int | None = None,
) -> dict[int, AccountModel]:
    """Apply ``postings`` atomically under row locks; return the locked accounts by id.

    Raises:
        InsufficientFunds: a balance would go negative or below its held money.
    """
    account_ids = sorted({posting.account_id for posting in postings})
    locked = session.scalars(
        select(AccountModel)
        .where(AccountModel.id.in_(account_ids))
        .order_by(AccountModel.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).all()
    accounts = {account.id: account for account in locked}
    for posting in postings:
        account = accounts[posting.account_id]
        new_balance = account.balance + posting.amount
        new_held = account.held + posting.held
        if new_balance < 0 or new_held > new_balance:
            needed = max(-posting.amount, 0) + max(posting.held, 0)
            raise InsufficientFunds(
                user_id=account.user_id,
                balance=account.balance,
                held=account.held,
                available=account.balance - account.held,
                needed=needed,
            )
        account.balance = new_balance
        account.held = new_held
        if posting.amount != 0:
            session.add(
                LedgerEntryModel(
                    account_id=account.id,
                    amount=posting.amount,
                    balance_after=new_balance,
                    kind=kind,
                    operation_key=operation_key,
                    hold_id=hold_id,
                    counterparty_account_id=posting.counterparty_account_id,
                )
            )
        session.flush()
        _after_posting(posting, operation_key)
    return accounts
