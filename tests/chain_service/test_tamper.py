"""Tampering in PostgreSQL behind chain_service's back is caught, and the step is named."""

from __future__ import annotations

import httpx
from sqlalchemy import text

from gridweave_clients.chain import Step, verify_batch, verify_chain, verify_receipt
from gridweave_clients.chain.encoding import receipt_hash
from gridweave_clients.chain.models import BatchResponse, receipt_fields
from tests.chain_service.factories import proof_of, receipt_body, seal, tampering, whole_chain


def _sealed_chain(chain: httpx.Client, count: int = 6) -> BatchResponse:
    for _ in range(count):
        chain.post("/v1/receipts", json=receipt_body())
    batch = seal(chain)
    assert verify_batch(batch, whole_chain(chain).receipts).ok
    return batch


class TestEditedReceipt:
    def test_an_edited_figure_breaks_the_receipt_hash(
        self, chain: httpx.Client, chain_database: str
    ) -> None:
        batch = _sealed_chain(chain)
        with tampering(chain_database) as db:
            db.execute(text("UPDATE receipts SET charged = 1, cost = 1 WHERE seq = 3"))

        result = verify_receipt(proof_of(chain, 3), trusted_public_key=batch.public_key)

        assert result.first_failure is not None
        assert result.first_failure.step == Step.RECEIPT_HASH
        assert "receipt 3" in result.first_failure.detail
        assert verify_receipt(proof_of(chain, 2)).ok  # the others still verify

    def test_an_edit_with_its_hash_recomputed_breaks_the_link_and_the_merkle_path(
        self, chain: httpx.Client, chain_database: str
    ) -> None:
        batch = _sealed_chain(chain)
        forged = proof_of(chain, 3).receipt.model_copy(update={"cost": 1, "charged": 1})
        new_hash = receipt_hash(receipt_fields(forged), seq=3, prev_hash=forged.prev_hash)
        with tampering(chain_database) as db:
            db.execute(
                text("UPDATE receipts SET charged = 1, cost = 1, hash = :h WHERE seq = 3"),
                {"h": new_hash},
            )

        receipt = verify_receipt(proof_of(chain, 3), trusted_public_key=batch.public_key)
        audit = verify_chain(whole_chain(chain).receipts)

        assert receipt.first_failure is not None
        assert receipt.first_failure.step == Step.MERKLE_INCLUSION
        assert audit.first_failure is not None
        assert audit.first_failure.step == Step.CHAIN_LINK
        assert "receipt 4" in audit.first_failure.detail


def test_an_edited_batch_root_breaks_the_merkle_path_and_the_signature(
    chain: httpx.Client, chain_database: str
) -> None:
    batch = _sealed_chain(chain)
    with tampering(chain_database) as db:
        db.execute(text("UPDATE batches SET root = repeat('e', 64) WHERE batch_id = 1"))

    result = verify_receipt(proof_of(chain, 2), trusted_public_key=batch.public_key)

    assert result.first_failure is not None
    assert result.first_failure.step == Step.MERKLE_INCLUSION
    assert result.failed_steps == {Step.MERKLE_INCLUSION, Step.BATCH_SIGNATURE}


def test_a_removed_receipt_breaks_the_chain_and_the_batch_root(
    chain: httpx.Client, chain_database: str
) -> None:
    batch = _sealed_chain(chain)
    with tampering(chain_database) as db:
        db.execute(text("DELETE FROM receipts WHERE seq = 4"))

    receipts = whole_chain(chain).receipts
    audit = verify_chain(receipts)
    sealed = verify_batch(batch, receipts, trusted_public_key=batch.public_key)
    neighbour = verify_receipt(proof_of(chain, 5), trusted_public_key=batch.public_key)

    assert [r.seq for r in receipts] == [1, 2, 3, 5, 6]
    assert audit.first_failure is not None
    assert audit.first_failure.step == Step.CHAIN_LINK
    assert "receipt 5 comes after receipt 3" in audit.first_failure.detail
    assert Step.BATCH_ROOT in sealed.failed_steps
    assert neighbour.first_failure is not None
    assert neighbour.first_failure.step == Step.MERKLE_INCLUSION
