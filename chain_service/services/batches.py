"""Sealing the receipts not in a batch yet into Merkle batches, signed by chain_service."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from chain_service.errors import BatchNotFound
from chain_service.models import BatchModel, ReceiptModel
from chain_service.signing import SigningKey
from gridweave_clients.chain.encoding import batch_message
from gridweave_clients.chain.merkle import merkle_root
from gridweave_clients.chain.models import AnchorResponse, BatchResponse

__all__ = [
    "SEAL_LOCK_KEY",
    "batch_for_seq",
    "batch_response",
    "batches_between",
    "get_batch_row",
    "seal_batch",
]

#: The advisory lock sealing takes ("btch"): one sealer extends the batches at a time.
SEAL_LOCK_KEY = 0x62746368


def batch_response(row: BatchModel) -> BatchResponse:
    """Convert a batch row to its API body."""
    anchor = None
    if row.anchor_height is not None:
        assert row.anchor_chain_id and row.anchor_tx_hash and row.anchored_at
        anchor = AnchorResponse(
            chain_id=row.anchor_chain_id,
            height=row.anchor_height,
            tx_hash=row.anchor_tx_hash,
            proof=row.anchor_proof or {},
            anchored_at=row.anchored_at,
        )
    return BatchResponse(
        batch_id=row.batch_id,
        first_seq=row.first_seq,
        last_seq=row.last_seq,
        leaf_count=row.leaf_count,
        root=row.root,
        last_hash=row.last_hash,
        signature=row.signature,
        public_key=row.public_key,
        created_at=row.created_at,
        anchor=anchor,
    )


def seal_batch(session: Session, *, key: SigningKey, max_receipts: int) -> BatchModel | None:
    """Seal up to ``max_receipts`` receipts after the last batch into a new one; commits.

    None (and nothing written) when every receipt is in a batch already.
    """
    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SEAL_LOCK_KEY})
    last = session.execute(
        select(BatchModel.batch_id, BatchModel.last_seq)
        .order_by(BatchModel.last_seq.desc())
        .limit(1)
    ).one_or_none()
    # batch ids and seqs are gapless: batch n + 1 starts right after batch n
    batch_id, first_seq = (1, 1) if last is None else (last.batch_id + 1, last.last_seq + 1)
    leaves = session.execute(
        select(ReceiptModel.seq, ReceiptModel.hash)
        .where(ReceiptModel.seq >= first_seq)
        .order_by(ReceiptModel.seq)
        .limit(max_receipts)
    ).all()
    if not leaves:
        session.commit()
        return None
    last_seq, last_hash = leaves[-1].seq, leaves[-1].hash
    root = merkle_root([bytes.fromhex(leaf.hash) for leaf in leaves]).hex()
    message = batch_message(
        batch_id=batch_id, first_seq=first_seq, last_seq=last_seq, root=root, last_hash=last_hash
    )
    row = BatchModel(
        batch_id=batch_id,
        first_seq=first_seq,
        last_seq=last_seq,
        leaf_count=len(leaves),
        root=root,
        last_hash=last_hash,
        signature=key.sign(message),
        public_key=key.public_key_hex,
    )
    session.add(row)
    session.flush()
    session.commit()
    return row


def get_batch_row(session: Session, batch_id: int) -> BatchModel:
    """One batch; raises BatchNotFound."""
    row = session.get(BatchModel, batch_id)
    if row is None:
        raise BatchNotFound(batch_id=batch_id)
    return row


def batch_for_seq(session: Session, seq: int) -> BatchModel | None:
    """The batch holding receipt ``seq``, or None while it is in none."""
    return session.scalar(
        select(BatchModel).where(BatchModel.first_seq <= seq, BatchModel.last_seq >= seq)
    )


def batches_between(session: Session, first_seq: int, last_seq: int) -> Sequence[BatchModel]:
    """The batches holding any receipt in ``first_seq ..= last_seq``, ascending."""
    return session.scalars(
        select(BatchModel)
        .where(BatchModel.last_seq >= first_seq, BatchModel.first_seq <= last_seq)
        .order_by(BatchModel.first_seq)
    ).all()
