"""Reading and opening accounts."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from credit_service.models import AccountModel, LedgerEntryModel
from credit_service.services.ledger import account_response, ensure_account, get_account
from gridweave_clients.credit.models import (
    AccountResponse,
    LedgerEntryResponse,
    LedgerPageResponse,
)

__all__ = ["get_user_account", "list_account_entries", "open_account"]


def open_account(session: Session, *, user_id: str) -> AccountResponse:
    """Open the account of ``user_id`` if missing (idempotent); return it."""
    account = ensure_account(session, user_id)
    session.commit()
    return account_response(account)


def get_user_account(session: Session, *, user_id: str) -> AccountResponse:
    """The account of ``user_id``; raises AccountNotFound."""
    return account_response(get_account(session, user_id))


def list_account_entries(
    session: Session, *, user_id: str, limit: int, before_id: int | None
) -> LedgerPageResponse:
    """A page of the account's ledger, newest first."""
    account = get_account(session, user_id)
    counterparty = aliased(AccountModel)
    query = (
        select(LedgerEntryModel, counterparty.user_id)
        .outerjoin(counterparty, counterparty.id == LedgerEntryModel.counterparty_account_id)
        .where(LedgerEntryModel.account_id == account.id)
        .order_by(LedgerEntryModel.id.desc())
        .limit(limit)
    )
    if before_id is not None:
        query = query.where(LedgerEntryModel.id < before_id)
    rows = session.execute(query).all()
    entries = [
        LedgerEntryResponse(
            id=entry.id,
            amount=entry.amount,
            balance_after=entry.balance_after,
            kind=entry.kind,
            operation_key=entry.operation_key,
            hold_id=entry.hold_id,
            counterparty_user_id=counterparty_user_id,
            created_at=entry.created_at,
        )
        for entry, counterparty_user_id in rows
    ]
    next_before_id = entries[-1].id if len(entries) == limit else None
    return LedgerPageResponse(user_id=user_id, entries=entries, next_before_id=next_before_id)
