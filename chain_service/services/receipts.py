"""Appending receipts to the hash chain (once per settlement) and reading them back."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from chain_service.errors import ReceiptConflict, ReceiptNotFound
from chain_service.models import ReceiptModel
from chain_service.services.batches import batch_for_seq
from gridweave_clients.chain.encoding import GENESIS_HASH, receipt_hash
from gridweave_clients.chain.models import (
    ReceiptFields,
    ReceiptResponse,
    RecordReceiptRequest,
    receipt_fields,
)

__all__ = [
    "APPEND_LOCK_KEY",
    "append_receipt",
    "find_receipt",
    "get_receipt_row",
    "receipt_response",
    "record_receipt",
]

#: The advisory lock appends queue on ("rcpt"): the head is read and extended under it.
APPEND_LOCK_KEY = 0x72637074
_FIELD_NAMES = tuple(ReceiptFields.model_fields)


def receipt_response(row: ReceiptModel, *, batch_id: int | None) -> ReceiptResponse:
    """Convert a receipt row to its API body."""
    values = {name: getattr(row, name) for name in _FIELD_NAMES}
    return ReceiptResponse(
        **values,
        seq=row.seq,
        prev_hash=row.prev_hash,
        hash=row.hash,
        recorded_at=row.recorded_at,
        batch_id=batch_id,
    )


def _row_fields(row: ReceiptModel) -> dict[str, Any]:
    return receipt_fields(ReceiptFields.model_validate({n: getattr(row, n) for n in _FIELD_NAMES}))


def find_receipt(session: Session, hold_reference: str) -> ReceiptModel | None:
    """The receipt of a settlement, or None."""
    return session.scalar(select(ReceiptModel).where(ReceiptModel.hold_reference == hold_reference))


def _check_replay(row: ReceiptModel, request: RecordReceiptRequest) -> None:
    stored, sent = _row_fields(row), receipt_fields(request)
    differing = sorted(name for name in sent if stored[name] != sent[name])
    if differing:
        raise ReceiptConflict(
            hold_reference=row.hold_reference, seq=row.seq, differing_fields=differing
        )


def append_receipt(session: Session, request: RecordReceiptRequest) -> tuple[ReceiptModel, bool]:
    """Append the settlement's receipt unless it has one; (the row, whether it existed); commits.

    Raises:
        ReceiptConflict: the settlement has a receipt with other fields.
    """
    existing = find_receipt(session, request.hold_reference)
    if existing is None:
        # Appends queue here; UNIQUE (prev_hash) would refuse a fork even without the lock.
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": APPEND_LOCK_KEY})
        existing = find_receipt(session, request.hold_reference)
    if existing is not None:
        _check_replay(existing, request)
        session.commit()
        return existing, True
    head = session.execute(
        select(ReceiptModel.seq, ReceiptModel.hash).order_by(ReceiptModel.seq.desc()).limit(1)
    ).one_or_none()
    seq, prev_hash = (1, GENESIS_HASH) if head is None else (head.seq + 1, head.hash)
    fields = receipt_fields(request)
    row = ReceiptModel(
        seq=seq,
        prev_hash=prev_hash,
        hash=receipt_hash(fields, seq=seq, prev_hash=prev_hash),
        **request.model_dump(),
    )
    session.add(row)
    session.flush()
    session.commit()
    return row, False


def get_receipt_row(session: Session, seq: int) -> ReceiptModel:
    """The receipt at ``seq``; raises ReceiptNotFound."""
    row = session.get(ReceiptModel, seq)
    if row is None:
        raise ReceiptNotFound(seq=seq)
    return row


def record_receipt(session: Session, request: RecordReceiptRequest) -> tuple[ReceiptResponse, bool]:
    """Append the settlement's receipt once; (the receipt, whether it was a replay).

    Raises:
        ReceiptConflict: the settlement has a receipt with other fields.
    """
    row, replayed = append_receipt(session, request)
    batch = batch_for_seq(session, row.seq) if replayed else None
    response = receipt_response(row, batch_id=None if batch is None else batch.batch_id)
    session.commit()
    return response, replayed
