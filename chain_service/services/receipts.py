"""Appending receipts to the hash chain (once per settlement) and reading them back."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select, text
from sqlalchemy.orm import Session

from chain_service.errors import ReceiptConflict, ReceiptNotFound
from chain_service.models import ReceiptModel
from chain_service.services.batches import batch_for_seq, batches_between
from gridweave_clients.chain.encoding import GENESIS_HASH, receipt_hash
from gridweave_clients.chain.models import (
    ReceiptFields,
    ReceiptResponse,
    RecordReceiptRequest,
    RecordReceiptsRequest,
    RecordReceiptsResponse,
    receipt_fields,
)
from gridweave_runtime.errors import InvalidRequest

__all__ = [
    "APPEND_LOCK_KEY",
    "append_receipt",
    "append_receipts",
    "find_receipt",
    "get_receipt_row",
    "receipt_response",
    "record_receipt",
    "record_receipts",
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


def append_receipts(
    session: Session, requests: Sequence[RecordReceiptRequest]
) -> list[tuple[ReceiptModel, bool]]:
    """Append each settlement's receipt unless it has one, in one transaction; commits.

    Returns (the row, whether it existed) per request, in order. One transaction, one
    commit for all: the append lock is held for a single commit whatever the count.

    Raises:
        InvalidRequest: the same hold reference twice in ``requests``.
        ReceiptConflict: a settlement has a receipt with other fields (nothing appended).
    """
    references = [request.hold_reference for request in requests]
    if len(set(references)) != len(references):
        raise InvalidRequest("receipts", "each hold_reference at most once per call")

    def existing_rows() -> dict[str, ReceiptModel]:
        rows = session.scalars(
            select(ReceiptModel).where(ReceiptModel.hold_reference.in_(references))
        )
        return {row.hold_reference: row for row in rows}

    # Appends queue here (replays too: one lookup, after the lock, is cheaper than two);
    # UNIQUE (prev_hash) would refuse a fork even without the lock.
    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": APPEND_LOCK_KEY})
    existing = existing_rows()
    for request in requests:
        if request.hold_reference in existing:
            _check_replay(existing[request.hold_reference], request)
    head = session.execute(
        select(ReceiptModel.seq, ReceiptModel.hash).order_by(ReceiptModel.seq.desc()).limit(1)
    ).one_or_none()
    seq, prev_hash = (0, GENESIS_HASH) if head is None else (head.seq, head.hash)
    results: list[tuple[ReceiptModel, bool]] = []
    new_rows: list[dict[str, Any]] = []
    recorded_at = datetime.now(UTC)
    for request in requests:
        if request.hold_reference in existing:
            results.append((existing[request.hold_reference], True))
            continue
        seq += 1
        values = {
            **request.model_dump(),
            "seq": seq,
            "prev_hash": prev_hash,
            "hash": receipt_hash(receipt_fields(request), seq=seq, prev_hash=prev_hash),
            "recorded_at": recorded_at,
        }
        prev_hash = values["hash"]
        new_rows.append(values)
        results.append((ReceiptModel(**values), False))
    if new_rows:
        # one multi-row INSERT (no ORM unit of work): the rows are known in full already
        session.execute(insert(ReceiptModel), new_rows)
    session.commit()
    return results


def append_receipt(session: Session, request: RecordReceiptRequest) -> tuple[ReceiptModel, bool]:
    """Append one settlement's receipt unless it has one; (the row, whether it existed).

    Raises:
        ReceiptConflict: the settlement has a receipt with other fields.
    """
    return append_receipts(session, [request])[0]


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


def record_receipts(session: Session, request: RecordReceiptsRequest) -> RecordReceiptsResponse:
    """Append several receipts in one transaction; each with whether it was a replay."""
    results = append_receipts(session, request.receipts)
    seqs = [row.seq for row, _ in results]
    batches = batches_between(session, min(seqs), max(seqs))

    def batch_id(seq: int) -> int | None:
        return next((b.batch_id for b in batches if b.first_seq <= seq <= b.last_seq), None)

    response = RecordReceiptsResponse(
        receipts=[receipt_response(row, batch_id=batch_id(row.seq)) for row, _ in results],
        replayed=[was for _, was in results],
    )
    session.commit()
    return response
