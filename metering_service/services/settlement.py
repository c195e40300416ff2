"""Settling a usage record's credit hold with credit_service, exactly once.

The record row is locked while credit_service is called, so concurrent duplicates of one
record wait and then find it settled: a new record is settled in the transaction that
inserts it (its uncommitted row holds the hold reference's unique key, and the record, its
settlement and its receipt commit together), a stored one is locked ``SELECT ... FOR
UPDATE``. A process that dies before the commit keeps nothing of a new record: the report
was never answered, so its sender reports it again. credit_service settles
by reference (the job or endpoint id) under its own idempotency key, so even a call whose
answer was lost is never applied twice: the next replay sends the same reference and the
same amount and gets the first answer back.

A reference is settled once, by whoever comes first: this record's capture, or a release
(a settlement of 0, endpoint billing closing the holds of a run no view names). credit_service
claims the reference's settlement key and locks the hold in one statement, so the two
never both move money: a release after the capture is refused there (billing ignores it),
and a capture after the release leaves this record refused as ``hold_closed``, uncharged.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from gridweave_clients.credit import CreditClient
from gridweave_clients.credit.models import HoldResponse
from gridweave_clients.errors import ServiceRefused, ServiceUnavailable
from metering_service.errors import HoldOwnerMismatch, UsageRecordNotFound
from metering_service.models import SettlementState, UsageRecordModel
from metering_service.services.receipts import enqueue_receipt

__all__ = [
    "ALLOWED_SETTLEMENT_MOVES",
    "HOLD_CLOSED",
    "lock_usage_record",
    "note_credit_unavailable",
    "settle_locked_record",
    "settle_usage_record",
    "settlement_call",
    "switch_settlement_state",
]

ALLOWED_SETTLEMENT_MOVES: dict[str, frozenset[str]] = {
    SettlementState.PENDING: frozenset(
        {SettlementState.PENDING, SettlementState.SETTLED, SettlementState.REFUSED}
    ),
    SettlementState.REFUSED: frozenset(
        {SettlementState.PENDING, SettlementState.SETTLED, SettlementState.REFUSED}
    ),
    SettlementState.SETTLED: frozenset(),
}
_ERROR_LENGTH = 500
#: credit_service's refusals that mean the hold was closed without this record: settled
#: under its reference's settlement key with another amount (a release of a period no
#: run names any more, decided while this record was on its way), or closed by id. Such a
#: record can never settle: it is refused as ``hold_closed``, and nothing is charged for it.
_HOLD_CLOSED_REFUSALS = frozenset({"idempotency_conflict", "hold_not_open"})
HOLD_CLOSED = "hold_closed"


def switch_settlement_state(
    record: UsageRecordModel,
    state: str,
    *,
    hold: HoldResponse | None = None,
    amount: int | None = None,
    error_code: str | None = None,
    error: str | None = None,
) -> None:
    """The one writer of a record's settlement: note one attempt's outcome.

    Raises:
        ValueError: the move is not in ``ALLOWED_SETTLEMENT_MOVES`` (settled is final).
    """
    if state not in ALLOWED_SETTLEMENT_MOVES[record.settlement_state]:
        raise ValueError(f"settlement cannot move from {record.settlement_state} to {state}")
    record.settlement_state = state
    record.settlement_attempts += 1
    if amount is not None:
        record.settlement_amount = amount
    record.settlement_error_code = error_code
    record.settlement_error = error[:_ERROR_LENGTH] if error else None
    if state == SettlementState.SETTLED:
        assert hold is not None
        record.charged = hold.captured
        record.hold_id = hold.hold_id
        record.settled_at = datetime.now(UTC)


def settlement_call(record: UsageRecordModel) -> dict[str, Any]:
    """What credit_service is asked to settle for ``record``: its hold's reference, the
    account that pays, and the amount persisted for it."""
    return {
        "reference": record.hold_reference,
        "user_id": record.owner_id,
        "amount": record.settlement_amount,
    }


def note_credit_unavailable(record: UsageRecordModel, error: ServiceUnavailable) -> None:
    """Note an attempt credit_service never answered: the record stays pending."""
    switch_settlement_state(
        record, SettlementState.PENDING, error_code="credit_unavailable", error=str(error)
    )


def lock_usage_record(session: Session, usage_id: int) -> UsageRecordModel:
    """The record, locked until the transaction ends; raises UsageRecordNotFound."""
    record = session.scalar(
        select(UsageRecordModel)
        .where(UsageRecordModel.id == usage_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if record is None:
        raise UsageRecordNotFound(usage_id=usage_id)
    return record


def _capped_amount(record: UsageRecordModel, refusal: ServiceRefused) -> int | None:
    """The hold's amount when the cost exceeds it: the charge is capped at what was held."""
    hold_amount = refusal.details.get("hold_amount")
    if (
        refusal.code == "capture_exceeds_hold"
        and isinstance(hold_amount, int)
        and 0 <= hold_amount < record.settlement_amount
    ):
        return hold_amount
    return None


def _discard_record(session: Session, record: UsageRecordModel, refusal: ServiceRefused) -> None:
    """Remove a record whose hold bills another account, and refuse it.

    Such a record could never settle, and kept it would hold its reference: the right
    record could not be recorded, and the hold would stay open. Nothing was charged for it
    (credit_service refused before moving anything), so nothing is lost.

    Raises:
        HoldOwnerMismatch: always, naming the record's owner and the hold's.
    """
    owner_id, hold_reference = record.owner_id, record.hold_reference
    session.delete(record)
    session.commit()
    raise HoldOwnerMismatch(
        owner_id=owner_id,
        hold_owner_id=refusal.details.get("hold_user_id"),
        hold_reference=hold_reference,
    )


def settle_usage_record(
    session: Session, *, usage_id: int, credit: CreditClient
) -> UsageRecordModel:
    """Settle the stored record's hold unless it is settled already; commits each outcome.

    Raises:
        HoldOwnerMismatch: the hold is another account's; the record was removed.
    """
    return settle_locked_record(session, lock_usage_record(session, usage_id), credit=credit)


def settle_locked_record(
    session: Session, record: UsageRecordModel, *, credit: CreditClient
) -> UsageRecordModel:
    """Settle the hold of ``record``, locked in this transaction (``lock_usage_record``, or
    inserted and not yet committed); commits each outcome.

    Raises:
        HoldOwnerMismatch: the hold is another account's; the record was removed.
    """
    usage_id = record.id
    # Two rounds at most: the second only after the charge was capped at the hold's amount.
    for _ in range(2):
        if record.settlement_state == SettlementState.SETTLED:
            session.commit()
            return record
        try:
            hold = credit.settle(**settlement_call(record))
        except ServiceUnavailable as exc:
            note_credit_unavailable(record, exc)
        except ServiceRefused as exc:
            if exc.code == "hold_owner_mismatch":
                _discard_record(session, record, exc)
            capped = _capped_amount(record, exc)
            if capped is not None:
                # persisted before it is sent, so every later attempt sends the same amount
                switch_settlement_state(
                    record, SettlementState.PENDING, amount=capped, error_code=exc.code
                )
                session.commit()
                record = lock_usage_record(session, usage_id)
                continue
            code = HOLD_CLOSED if exc.code in _HOLD_CLOSED_REFUSALS else exc.code
            switch_settlement_state(
                record, SettlementState.REFUSED, error_code=code, error=f"{exc.code}: {exc}"
            )
        else:
            switch_settlement_state(record, SettlementState.SETTLED, hold=hold)
            enqueue_receipt(session, record)  # in the settling transaction: never lost
        session.commit()
        return record
    session.commit()
    return record  # capped twice: left pending, the next replay tries again
