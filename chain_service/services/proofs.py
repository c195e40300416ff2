"""Receipts with what proves them: their batch and Merkle path; the chain page by page."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from chain_service.models import BatchModel, ReceiptModel
from chain_service.services.batches import batch_for_seq, batch_response, batches_between
from chain_service.services.receipts import get_receipt_row, receipt_response
from gridweave_clients.chain.merkle import inclusion_path
from gridweave_clients.chain.models import (
    ChainPageResponse,
    ReceiptProofResponse,
    SubjectReceiptsResponse,
)

__all__ = ["get_receipt_proof", "list_chain", "list_subject_receipts"]


def _proof(session: Session, row: ReceiptModel, batch: BatchModel | None) -> ReceiptProofResponse:
    if batch is None:
        return ReceiptProofResponse(
            receipt=receipt_response(row, batch_id=None),
            batch=None,
            leaf_index=None,
            merkle_path=[],
        )
    # The leaves come from the receipts, not from the batch: a removed or edited receipt
    # gives a path that no longer leads to the sealed root, and the verifier says so.
    leaves = session.scalars(
        select(ReceiptModel.hash)
        .where(ReceiptModel.seq >= batch.first_seq, ReceiptModel.seq <= batch.last_seq)
        .order_by(ReceiptModel.seq)
    ).all()
    hashes = [bytes.fromhex(leaf) for leaf in leaves]
    index = leaves.index(row.hash)
    return ReceiptProofResponse(
        receipt=receipt_response(row, batch_id=batch.batch_id),
        batch=batch_response(batch),
        leaf_index=index,
        merkle_path=[sibling.hex() for sibling in inclusion_path(hashes, index)],
    )


def get_receipt_proof(session: Session, *, seq: int) -> ReceiptProofResponse:
    """The receipt at ``seq`` and its proof; raises ReceiptNotFound."""
    row = get_receipt_row(session, seq)
    return _proof(session, row, batch_for_seq(session, seq))


def list_subject_receipts(session: Session, *, subject_id: str) -> SubjectReceiptsResponse:
    """Every receipt of a job or endpoint with its proof, oldest first (maybe none)."""
    rows = session.scalars(
        select(ReceiptModel).where(ReceiptModel.subject_id == subject_id).order_by(ReceiptModel.seq)
    ).all()
    return SubjectReceiptsResponse(
        subject_id=subject_id,
        receipts=[_proof(session, row, batch_for_seq(session, row.seq)) for row in rows],
    )


def list_chain(session: Session, *, from_seq: int, limit: int) -> ChainPageResponse:
    """Receipts from ``from_seq`` on, ascending, each with its batch id."""
    rows = session.scalars(
        select(ReceiptModel)
        .where(ReceiptModel.seq >= from_seq)
        .order_by(ReceiptModel.seq)
        .limit(limit)
    ).all()
    if not rows:
        return ChainPageResponse(receipts=[], next_seq=None)
    batches = batches_between(session, rows[0].seq, rows[-1].seq)

    def batch_id(seq: int) -> int | None:
        return next((b.batch_id for b in batches if b.first_seq <= seq <= b.last_seq), None)

    more = session.scalar(select(func.max(ReceiptModel.seq))) != rows[-1].seq
    return ChainPageResponse(
        receipts=[receipt_response(row, batch_id=batch_id(row.seq)) for row in rows],
        next_seq=rows[-1].seq + 1 if more else None,
    )
