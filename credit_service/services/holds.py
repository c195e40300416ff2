"""Holds: place, capture (part; the rest is released), release, settle by reference."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from psycopg import OperationalError
from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from credit_service import queries
from credit_service.errors import CaptureExceedsHold, HoldNotFound, HoldNotOpen, ReferenceInUse
from credit_service.models import AccountModel, HoldModel, HoldStatus
from credit_service.services.idempotency import request_fingerprint, run_idempotent
from credit_service.services.ledger import (
    AccountState,
    Posting,
    account_response,
    get_account,
    move_money,
    settle_hold,
)
from credit_service.services.spending_limits import check_hold_within_caps
from gridweave_clients.credit.models import (
    HoldResponse,
    OpenHoldResponse,
    OpenHoldsPageResponse,
)
from gridweave_runtime.async_connections import AsyncConnections

__all__ = [
    "capture_hold",
    "get_hold",
    "list_open_holds",
    "place_hold",
    "release_hold",
    "settle_reference",
    "settlement_key",
]


def settlement_key(reference: str) -> str:
    """The idempotency key a settlement of ``reference`` runs under.

    The space cannot appear in a caller's key (printable ASCII without spaces), so no other
    call can claim a settlement's key first; the digest keeps it short whatever the length
    of the reference.
    """
    return "settlement " + hashlib.sha256(reference.encode()).hexdigest()


@dataclass(frozen=True)
class _Hold:
    id: int
    account_id: int
    amount: int
    captured: int
    status: str
    reference: str | None


def _hold_response(hold: _Hold, account: AccountState) -> HoldResponse:
    released = hold.amount - hold.captured if hold.status != HoldStatus.OPEN else 0
    return HoldResponse(
        hold_id=hold.id,
        user_id=account.user_id,
        amount=hold.amount,
        captured=hold.captured,
        released=released,
        status=hold.status,
        reference=hold.reference,
        account=account_response(account),
    )


def _locked_hold(row: Row[Any] | None, **missing: Any) -> _Hold:
    if row is None:
        raise HoldNotFound(**missing)
    return _Hold(
        id=row.id,
        account_id=row.account_id,
        amount=row.amount,
        captured=row.captured,
        status=row.status,
        reference=row.reference,
    )


def get_hold(session: Session, *, hold_id: int) -> HoldResponse:
    """A hold and its account; raises HoldNotFound."""
    row = session.execute(
        select(
            HoldModel.id,
            HoldModel.account_id,
            HoldModel.amount,
            HoldModel.captured,
            HoldModel.status,
            HoldModel.reference,
            AccountModel.user_id,
            AccountModel.balance,
            AccountModel.held,
        )
        .join(AccountModel, AccountModel.id == HoldModel.account_id)
        .where(HoldModel.id == hold_id)
    ).one_or_none()
    if row is None:
        raise HoldNotFound(hold_id=hold_id)
    hold = _Hold(*row[:6])
    account = AccountState(id=hold.account_id, user_id=row[6], balance=row[7], held=row[8])
    return _hold_response(hold, account)


def list_open_holds(
    session: Session, *, reference_prefix: str, limit: int, after_id: int | None
) -> OpenHoldsPageResponse:
    """Open holds whose reference starts with ``reference_prefix`` (literally), oldest first."""
    escaped = reference_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    query = (
        select(HoldModel.id, AccountModel.user_id, HoldModel.amount, HoldModel.reference)
        .join(AccountModel, AccountModel.id == HoldModel.account_id)
        .where(HoldModel.status == HoldStatus.OPEN)
        .where(HoldModel.reference.like(escaped + "%", escape="\\"))
        .order_by(HoldModel.id)
        .limit(limit + 1)
    )
    if after_id is not None:
        query = query.where(HoldModel.id > after_id)
    rows = session.execute(query).all()
    holds = [
        OpenHoldResponse(hold_id=row[0], user_id=row[1], amount=row[2], reference=row[3])
        for row in rows[:limit]
    ]
    more = len(rows) > limit
    return OpenHoldsPageResponse(holds=holds, next_after_id=holds[-1].hold_id if more else None)


def place_hold(
    session: Session,
    *,
    caller: str,
    user_id: str,
    amount: int,
    idempotency_key: str,
    reference: str | None,
) -> tuple[HoldResponse, bool]:
    """Set ``amount`` aside on ``user_id``'s account; 402 when it is not available or would
    pass a spending cap (``spending_limits``)."""

    def place() -> HoldResponse:
        account = get_account(session, user_id)
        check_hold_within_caps(session, account_id=account.id, amount=amount)
        states = move_money(
            session, [Posting(account.id, held=amount)], kind="hold", operation_key=idempotency_key
        )
        hold_id = queries.insert_hold(
            session, account_id=account.id, amount=amount, reference=reference
        )
        if hold_id is None:
            raise ReferenceInUse(reference=reference)
        hold = _Hold(hold_id, account.id, amount, 0, HoldStatus.OPEN, reference)
        return _hold_response(hold, states[account.id])

    return run_idempotent(
        session,
        caller=caller,
        key=idempotency_key,
        kind="hold",
        request={"user_id": user_id, "amount": amount, "reference": reference},
        response_type=HoldResponse,
        action=place,
    )


def _close_hold(
    session: Session, hold: _Hold, *, capture: int, kind: str, key: str
) -> HoldResponse:
    if hold.status != HoldStatus.OPEN:
        raise HoldNotOpen(hold_id=hold.id, status=hold.status)
    if capture > hold.amount:
        raise CaptureExceedsHold(hold_id=hold.id, hold_amount=hold.amount, requested=capture)
    states = move_money(
        session,
        [Posting(hold.account_id, amount=-capture, held=-hold.amount)],
        kind=kind,
        operation_key=key,
        hold_id=hold.id,
    )
    status = HoldStatus.CAPTURED if capture > 0 else HoldStatus.RELEASED
    queries.close_hold(session, hold_id=hold.id, captured=capture, status=status)
    closed = _Hold(hold.id, hold.account_id, hold.amount, capture, status, hold.reference)
    return _hold_response(closed, states[hold.account_id])


def capture_hold(
    session: Session, *, caller: str, hold_id: int, amount: int, idempotency_key: str
) -> tuple[HoldResponse, bool]:
    """Charge ``amount`` (at most the hold) and release the rest; the hold is then closed."""

    def capture() -> HoldResponse:
        hold = _locked_hold(queries.lock_hold_by_id(session, hold_id=hold_id), hold_id=hold_id)
        return _close_hold(session, hold, capture=amount, kind="capture", key=idempotency_key)

    return run_idempotent(
        session,
        caller=caller,
        key=idempotency_key,
        kind="capture",
        request={"hold_id": hold_id, "amount": amount},
        response_type=HoldResponse,
        action=capture,
    )


def release_hold(
    session: Session, *, caller: str, hold_id: int, idempotency_key: str
) -> tuple[HoldResponse, bool]:
    """Give the whole hold back to the available balance; the hold is then closed."""

    def release() -> HoldResponse:
        hold = _locked_hold(queries.lock_hold_by_id(session, hold_id=hold_id), hold_id=hold_id)
        return _close_hold(session, hold, capture=0, kind="release", key=idempotency_key)

    return run_idempotent(
        session,
        caller=caller,
        key=idempotency_key,
        kind="release",
        request={"hold_id": hold_id},
        response_type=HoldResponse,
        action=release,
    )


async def settle_reference(
    connections: AsyncConnections, *, reference: str, user_id: str, amount: int
) -> tuple[str, bool]:
    """Capture ``amount`` of ``user_id``'s hold placed with ``reference``: once, for ever.

    Returns the answer as JSON text (the stored answer, byte for byte, on a replay) and
    whether it is a replay. One transaction: committed here, rolled back on any error.
    """
    key = settlement_key(reference)
    request = {"reference": reference, "user_id": user_id, "amount": amount}
    fingerprint = request_fingerprint("settlement", request)
    try:
        return await _settle_once(connections, request, key, fingerprint)
    except OperationalError:
        # a kept connection the server dropped (a restart) fails once, and is discarded;
        # the settlement's key makes a second try safe, whether or not the first committed
        return await _settle_once(connections, request, key, fingerprint)


async def _settle_once(
    connections: AsyncConnections, request: dict[str, Any], key: str, fingerprint: str
) -> tuple[str, bool]:
    async with connections.transaction() as connection:
        return await settle_hold(
            connection,
            reference=request["reference"],
            user_id=request["user_id"],
            amount=request["amount"],
            operation_key=key,
            fingerprint=fingerprint,
        )
