"""Mint, deduct and transfer: each an idempotent call of ``move_money``."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from credit_service.services.idempotency import run_idempotent
from credit_service.services.ledger import (
    AccountState,
    Posting,
    account_response,
    ensure_account,
    get_account,
    move_money,
)
from gridweave_clients.credit.models import MovementResponse, TransferResponse
from gridweave_runtime.errors import InvalidRequest

__all__ = ["deduct_credits", "mint_credits", "transfer_credits"]


def mint_credits(
    session: Session, *, caller: str, user_id: str, amount: int, idempotency_key: str
) -> tuple[MovementResponse, bool]:
    """Create ``amount`` on the account of ``user_id`` (opened if missing)."""
    return _single_account_movement(
        session,
        "mint",
        ensure_account,
        caller=caller,
        user_id=user_id,
        amount=amount,
        key=idempotency_key,
    )


def deduct_credits(
    session: Session, *, caller: str, user_id: str, amount: int, idempotency_key: str
) -> tuple[MovementResponse, bool]:
    """Take ``amount`` from the available balance of ``user_id``."""
    return _single_account_movement(
        session,
        "deduct",
        get_account,
        caller=caller,
        user_id=user_id,
        amount=-amount,
        key=idempotency_key,
    )


def _single_account_movement(
    session: Session,
    kind: str,
    find_account: Callable[[Session, str], AccountState],
    *,
    caller: str,
    user_id: str,
    amount: int,
    key: str,
) -> tuple[MovementResponse, bool]:
    """``amount`` (signed) onto one account, once per idempotency key."""

    def move() -> MovementResponse:
        account = find_account(session, user_id)
        accounts = move_money(
            session, [Posting(account.id, amount=amount)], kind=kind, operation_key=key
        )
        return MovementResponse(
            kind=kind,
            idempotency_key=key,
            amount=abs(amount),
            account=account_response(accounts[account.id]),
        )

    return run_idempotent(
        session,
        caller=caller,
        key=key,
        kind=kind,
        request={"user_id": user_id, "amount": abs(amount)},
        response_type=MovementResponse,
        action=move,
    )


def transfer_credits(
    session: Session,
    *,
    caller: str,
    from_user_id: str,
    to_user_id: str,
    amount: int,
    idempotency_key: str,
) -> tuple[TransferResponse, bool]:
    """Move ``amount`` between two users: both legs in one transaction, or neither."""
    if from_user_id == to_user_id:
        raise InvalidRequest("to_user_id", "a transfer needs two different accounts")

    def transfer() -> TransferResponse:
        source = get_account(session, from_user_id)
        target = get_account(session, to_user_id)
        accounts = move_money(
            session,
            [
                Posting(source.id, amount=-amount, counterparty_account_id=target.id),
                Posting(target.id, amount=amount, counterparty_account_id=source.id),
            ],
            kind="transfer",
            operation_key=idempotency_key,
        )
        return TransferResponse(
            idempotency_key=idempotency_key,
            amount=amount,
            from_account=account_response(accounts[source.id]),
            to_account=account_response(accounts[target.id]),
        )

    return run_idempotent(
        session,
        caller=caller,
        key=idempotency_key,
        kind="transfer",
        request={"from_user_id": from_user_id, "to_user_id": to_user_id, "amount": amount},
        response_type=TransferResponse,
        action=transfer,
    )
