"""Recording where each batch was anchored in CometBFT (once; the trigger allows no more)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from chain_service.models import BatchModel

__all__ = ["next_unanchored_batch", "record_anchor"]


def next_unanchored_batch(session: Session) -> BatchModel | None:
    """The lowest batch not anchored yet (batches are anchored in order), or None."""
    return session.scalar(
        select(BatchModel)
        .where(BatchModel.anchor_height.is_(None))
        .order_by(BatchModel.batch_id)
        .limit(1)
    )


def record_anchor(
    session: Session,
    *,
    batch_id: int,
    chain_id: str,
    height: int,
    tx_hash: str,
    proof: dict[str, Any],
) -> None:
    """Store the batch's anchor unless it has one; commits.

    ``proof``: ``tx`` (the transaction's Merkle proof and result), ``signed_header`` (the
    block header and its commit) and ``validators`` (the set at that height).
    """
    session.execute(
        update(BatchModel)
        .where(BatchModel.batch_id == batch_id, BatchModel.anchor_height.is_(None))
        .values(
            anchor_chain_id=chain_id,
            anchor_height=height,
            anchor_tx_hash=tx_hash,
            anchor_proof=proof,
            anchored_at=datetime.now(UTC),
        )
    )
    session.commit()
