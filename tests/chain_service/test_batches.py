"""Batches: the waiting receipts sealed under a signed Merkle root, now or on the interval."""

from __future__ import annotations

import time

import httpx
import pytest

from gridweave_clients.chain import verify_batch, verify_receipt
from tests.chain_service.factories import (
    chain_settings,
    proof_of,
    receipt_body,
    running_chain,
    seal,
    whole_chain,
)


class TestSeal:
    def test_a_batch_covers_the_waiting_receipts_and_each_proves_its_inclusion(
        self, chain: httpx.Client
    ) -> None:
        for _ in range(5):
            chain.post("/v1/receipts", json=receipt_body())

        batch = seal(chain)

        assert (batch.batch_id, batch.first_seq, batch.last_seq, batch.leaf_count) == (1, 1, 5, 5)
        assert batch.anchor is None  # CHAIN_ENABLED=false: hash chain and batches only
        receipts = whole_chain(chain).receipts
        assert verify_batch(batch, receipts, trusted_public_key=batch.public_key).ok
        for seq in range(1, 6):
            proof = proof_of(chain, seq)
            assert proof.receipt.batch_id == 1 and proof.leaf_index == seq - 1
            assert verify_receipt(proof, trusted_public_key=batch.public_key).ok

    def test_the_next_batch_starts_after_the_last_and_nothing_waiting_seals_nothing(
        self, chain: httpx.Client
    ) -> None:
        chain.post("/v1/receipts", json=receipt_body())
        seal(chain)
        assert chain.post("/v1/batches").json() == {"batch": None}
        chain.post("/v1/receipts", json=receipt_body())
        chain.post("/v1/receipts", json=receipt_body())

        second = seal(chain)

        assert (second.batch_id, second.first_seq, second.last_seq) == (2, 2, 3)
        assert chain.get("/v1/batches/2").json()["root"] == second.root
        assert chain.get("/v1/batches/3").status_code == 404

    def test_an_unbatched_receipt_proves_only_its_hash(self, chain: httpx.Client) -> None:
        chain.post("/v1/receipts", json=receipt_body())

        proof = proof_of(chain, 1)

        assert proof.batch is None
        assert [step.step for step in verify_receipt(proof).steps] == ["receipt_hash"]

    def test_a_foreign_key_is_not_trusted(self, chain: httpx.Client) -> None:
        chain.post("/v1/receipts", json=receipt_body())
        seal(chain)

        result = verify_receipt(proof_of(chain, 1), trusted_public_key="00" * 32)

        assert result.first_failure is not None
        assert result.first_failure.step == "batch_signature"


def test_the_sealer_seals_on_its_interval_in_batches_of_at_most_the_maximum(
    chain_database: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = chain_settings(
        chain_database,
        tmp_path_factory.mktemp("chain"),
        batch_interval_seconds=0.2,
        batch_max_receipts=3,
    )
    with running_chain(settings) as chain:
        for _ in range(7):
            chain.post("/v1/receipts", json=receipt_body())
        deadline = time.monotonic() + 20
        batches: list[dict[str, int]] = []
        while not batches or batches[-1]["last_seq"] < 7:
            assert time.monotonic() < deadline, f"the sealer stopped at {batches}"
            response = chain.get(f"/v1/batches/{len(batches) + 1}")
            if response.status_code == 200:
                batches.append(response.json())
            else:
                time.sleep(0.1)

    # receipts arrive while it seals: the batches tile 1..7, none larger than the maximum
    assert [b["first_seq"] for b in batches] == [1] + [b["last_seq"] + 1 for b in batches[:-1]]
    assert all(1 <= b["leaf_count"] <= 3 for b in batches)
