"""The receipt outbox: each settled record's receipt, delivered to chain_service at least once.

A record's outbox row is written in the transaction that settles it (``enqueue_receipt``),
so a settlement never exists without its receipt queued, whatever fails afterwards. The
deliverer (``metering_service.deliverer``) claims due rows (``FOR UPDATE SKIP LOCKED``,
leased for one attempt, so several processes share the queue), sends each receipt and
records the outcome. A deliverer that dies mid-attempt leaves the lease to run out and the
receipt is sent again: chain_service keeps one receipt per hold reference, so a second
delivery returns the first receipt and appends nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, timedelta

from sqlalchemy import BigInteger, bindparam, column, func, select, update
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.orm import Session

from gridweave_clients.chain.models import RecordReceiptRequest
from metering_service.models import (
    ReceiptOutboxModel,
    ReceiptState,
    SettlementState,
    UsageRecordModel,
)

__all__ = [
    "ClaimedReceipt",
    "claim_due_receipts",
    "enqueue_receipt",
    "receipt_request",
    "record_deliveries",
    "record_delivery",
]

_ERROR_LENGTH = 500


def enqueue_receipt(session: Session, record: UsageRecordModel) -> None:
    """Queue the settled record's receipt (once per record); flushes, never commits."""
    assert record.settlement_state == SettlementState.SETTLED
    session.execute(
        insert(ReceiptOutboxModel)
        .values(usage_id=record.id)
        .on_conflict_do_nothing(constraint="uq_receipt_outbox_usage_id")
    )


def receipt_request(record: UsageRecordModel) -> RecordReceiptRequest:
    """The receipt of a settled record, as chain_service takes it."""
    assert record.settled_at is not None and record.charged is not None
    return RecordReceiptRequest(
        kind=record.kind,  # CHECK kind IN (job, endpoint)
        subject_id=record.subject_id,
        hold_reference=record.hold_reference,
        user_id=record.user_id,
        owner_id=record.owner_id,
        node=record.node,
        vendor=record.vendor,
        gpu_model=record.gpu_model,
        gpu_count=record.gpu_count,
        vram_mb=record.vram_mb,
        started_at=record.started_at,
        finished_at=record.finished_at,
        wall_microseconds=round(record.wall_seconds * 1_000_000),
        billed_seconds=record.billed_seconds,
        price_per_gpu_second=record.price_per_gpu_second,
        cost=record.cost,
        charged=record.charged,
        settled_at=record.settled_at.astimezone(UTC),
        result_ref_sha256=record.result_ref_sha256,
    )


@dataclass(frozen=True)
class ClaimedReceipt:
    """One outbox row claimed for one delivery attempt, with its receipt."""

    outbox_id: int
    attempts: int
    request: RecordReceiptRequest


def claim_due_receipts(
    session: Session, *, limit: int, lease_seconds: float
) -> list[ClaimedReceipt]:
    """Claim up to ``limit`` due receipts, oldest first, leased for one attempt; commits."""
    due = (
        select(ReceiptOutboxModel.id)
        .where(
            ReceiptOutboxModel.state == ReceiptState.QUEUED,
            ReceiptOutboxModel.next_attempt_at <= func.now(),
        )
        .order_by(ReceiptOutboxModel.next_attempt_at, ReceiptOutboxModel.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    rows = session.execute(
        update(ReceiptOutboxModel)
        .where(ReceiptOutboxModel.id.in_(due.scalar_subquery()))
        .values(
            attempts=ReceiptOutboxModel.attempts + 1,
            next_attempt_at=func.now() + timedelta(seconds=lease_seconds),
        )
        .returning(ReceiptOutboxModel.id, ReceiptOutboxModel.usage_id, ReceiptOutboxModel.attempts)
    ).all()
    if not rows:  # the usual poll of an idle deliverer: one statement, no lookup
        session.commit()
        return []
    records = {
        record.id: record
        for record in session.scalars(
            select(UsageRecordModel).where(UsageRecordModel.id.in_([row[1] for row in rows]))
        )
    }
    session.commit()
    claimed = [ClaimedReceipt(row[0], row[2], receipt_request(records[row[1]])) for row in rows]
    return sorted(claimed, key=lambda item: item.outbox_id)


def record_delivery(
    session: Session,
    claimed: ClaimedReceipt,
    *,
    receipt_seq: int | None = None,
    error: str | None = None,
    refused: bool = False,
    retry_seconds: float = 1.0,
    max_retry_seconds: float = 60.0,
) -> None:
    """The one writer of an outbox row's state: one attempt's outcome; commits.

    Delivered (``receipt_seq``), refused for good (``refused``: chain_service said no, an
    operator must look), or queued again after ``retry_seconds`` doubled per attempt, at
    most ``max_retry_seconds``: a receipt is never given up because chain_service is away.
    """
    if receipt_seq is not None:
        record_deliveries(session, [claimed], [receipt_seq])
        return
    values: dict[str, object]
    if refused:
        values = {"state": ReceiptState.REFUSED}
    else:
        backoff = min(retry_seconds * 2 ** (claimed.attempts - 1), max_retry_seconds)
        values = {"next_attempt_at": func.now() + timedelta(seconds=backoff)}
    if error is not None:
        values["last_error"] = error[:_ERROR_LENGTH]
    session.execute(
        update(ReceiptOutboxModel)
        .where(
            ReceiptOutboxModel.id == claimed.outbox_id,
            ReceiptOutboxModel.state == ReceiptState.QUEUED,
        )
        .values(**values)
    )
    session.commit()


def record_deliveries(
    session: Session, claimed: list[ClaimedReceipt], receipt_seqs: list[int]
) -> None:
    """Mark each claimed receipt delivered with its seq, in one statement; commits.

    The one writer of ``delivered`` (``record_delivery`` comes here for one receipt).
    One ``UPDATE ... FROM unnest(ids, seqs)`` for the whole round: a statement per receipt
    cost the deliverer most of its CPU; the round's ids and seqs go as two array
    parameters, so the statement is compiled once per process (a ``VALUES`` list of
    literals was compiled again every round, row by row: half the deliverer's CPU).
    """
    delivered = (
        func.unnest(
            bindparam("outbox_ids", type_=ARRAY(BigInteger)),
            bindparam("seqs", type_=ARRAY(BigInteger)),
        )
        .table_valued(column("outbox_id", BigInteger), column("seq", BigInteger))
        .render_derived(name="delivered")
    )
    pairs = list(zip(claimed, receipt_seqs, strict=True))
    session.execute(
        update(ReceiptOutboxModel)
        .where(
            ReceiptOutboxModel.id == delivered.c.outbox_id,
            ReceiptOutboxModel.state == ReceiptState.QUEUED,
        )
        .values(
            state=ReceiptState.DELIVERED,
            receipt_seq=delivered.c.seq,
            delivered_at=func.now(),
            last_error=None,
        )
        .execution_options(synchronize_session=False),  # no row of the round is loaded
        {"outbox_ids": [item.outbox_id for item, _ in pairs], "seqs": [seq for _, seq in pairs]},
    )
    session.commit()
