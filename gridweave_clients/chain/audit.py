"""A full audit: every receipt and every batch of a chain_service, recomputed locally."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gridweave_clients.chain.client import ChainClient
from gridweave_clients.chain.models import ReceiptResponse
from gridweave_clients.chain.verify import (
    Step,
    StepResult,
    Verification,
    verify_anchor,
    verify_batch,
    verify_chain,
)

__all__ = ["audit_chain"]


def audit_chain(
    client: ChainClient,
    *,
    trusted_public_key: str | None = None,
    trusted_validators: Sequence[Mapping[str, Any]] | None = None,
    page_size: int = 1000,
) -> Verification:
    """Walk the chain from seq 1, page by page: each hash and link, then each sealed batch
    (its root, last hash and signature against all its receipts) and, when anchored, its
    anchor. Holds one batch's receipts at a time.
    """
    steps: list[StepResult] = []
    before: ReceiptResponse | None = None
    pending: list[ReceiptResponse] = []
    batch_id: int | None = None
    next_seq: int | None = 1

    def close_batch() -> None:
        if batch_id is None:
            return
        batch = client.get_batch(batch_id)
        sealed = verify_batch(batch, pending, trusted_public_key=trusted_public_key)
        # its receipts' hashes and links were checked with the page already
        steps.extend(s for s in sealed.steps if s.step in (Step.BATCH_ROOT, Step.BATCH_SIGNATURE))
        if batch.anchor is not None:
            steps.extend(verify_anchor(batch, trusted_validators=trusted_validators).steps)

    while next_seq is not None:
        page = client.list_chain(next_seq, limit=page_size)
        steps.extend(verify_chain(page.receipts, before=before).steps)
        for receipt in page.receipts:
            if receipt.batch_id != batch_id:
                close_batch()
                pending, batch_id = [], receipt.batch_id
            pending.append(receipt)
        if page.receipts:
            before = page.receipts[-1]
        next_seq = page.next_seq
    close_batch()
    return Verification(tuple(steps))
