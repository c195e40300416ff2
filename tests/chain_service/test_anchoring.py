"""CHAIN_ENABLED: each batch root anchored once, in order, in a real single-node CometBFT."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chain_service.abci.anchors import Code
from chain_service.cometbft_rpc import CometRpc
from chain_service.node import LocalNode
from chain_service.signing import SigningKey, load_signing_key
from gridweave_clients.chain import Step, verify_anchor, verify_receipt
from gridweave_clients.chain.encoding import anchor_tx, batch_anchor_tx, batch_message
from gridweave_clients.chain.models import ReceiptProofResponse
from tests.chain_service.factories import (
    chain_settings,
    receipt_body,
    running_chain,
    seal,
    wait_anchored,
)


def _anchored_proof(node: LocalNode, chain_database: str, tmp_path: Path) -> ReceiptProofResponse:
    settings = chain_settings(
        chain_database,
        tmp_path,
        signing_key_file=tmp_path / "signing.pem",
        enabled=True,
        cometbft_rpc_url=node.rpc_url,
    )
    with running_chain(settings) as chain:
        chain.post("/v1/receipts", json=receipt_body())
        chain.post("/v1/receipts", json=receipt_body())
        seal(chain)
        wait_anchored(chain, 1)
        return ReceiptProofResponse.model_validate_json(chain.get("/v1/receipts/2").content)


class TestVerifyTheAnchor:
    def test_every_step_passes_from_the_receipt_to_the_commit_signatures(
        self, node: LocalNode, chain_database: str, tmp_path: Path
    ) -> None:
        proof = _anchored_proof(node, chain_database, tmp_path)
        assert proof.batch is not None and proof.batch.anchor is not None
        trusted = proof.batch.anchor.proof["validators"]

        result = verify_receipt(proof, trusted_validators=trusted)

        assert result.ok, result.first_failure
        assert [step.step for step in result.steps] == [
            Step.RECEIPT_HASH,
            Step.MERKLE_INCLUSION,
            Step.BATCH_SIGNATURE,
            Step.ANCHOR_TX,
            Step.TX_INCLUSION,
            Step.BLOCK_COMMIT,
            Step.COMMIT_SIGNATURES,
        ]
        assert "10 of 10 voting power signed" in result.steps[-1].detail

    def test_a_forged_anchor_is_caught_at_its_step(
        self, node: LocalNode, chain_database: str, tmp_path: Path
    ) -> None:
        proof = _anchored_proof(node, chain_database, tmp_path)
        assert proof.batch is not None and proof.batch.anchor is not None
        batch, evidence = proof.batch, proof.batch.anchor.proof

        def first_failure(change: Callable[[dict[str, Any]], None], **options: Any) -> Step:
            forged = copy.deepcopy(evidence)
            change(forged)
            assert batch.anchor is not None
            anchor = batch.anchor.model_copy(update={"proof": forged})
            result = verify_anchor(batch.model_copy(update={"anchor": anchor}), **options)
            assert result.first_failure is not None
            return result.first_failure.step

        def other_tx(p: dict[str, Any]) -> None:
            p["tx"]["proof"]["data"] = base64.b64encode(b'{"v":1}').decode()

        def other_data_hash(p: dict[str, Any]) -> None:
            p["signed_header"]["header"]["data_hash"] = "AB" * 32

        def other_height(p: dict[str, Any]) -> None:
            p["signed_header"]["header"]["height"] = "99"

        def bad_signature(p: dict[str, Any]) -> None:
            for signature in p["signed_header"]["commit"]["signatures"]:
                signature["signature"] = base64.b64encode(bytes(64)).decode()

        stranger = [{**evidence["validators"][0], "voting_power": "11"}]

        assert first_failure(other_tx) == Step.ANCHOR_TX
        assert first_failure(other_data_hash) == Step.TX_INCLUSION
        assert first_failure(other_height) == Step.BLOCK_COMMIT
        assert first_failure(bad_signature) == Step.COMMIT_SIGNATURES
        assert first_failure(lambda p: None, trusted_validators=stranger) == (
            Step.COMMIT_SIGNATURES
        )


def test_each_batch_is_anchored_once_in_order_with_its_height_hash_and_proof(
    node: LocalNode, signing_key: SigningKey, chain_database: str, tmp_path: Path
) -> None:
    settings = chain_settings(
        chain_database,
        tmp_path,
        signing_key_file=tmp_path / "signing.pem",
        enabled=True,
        cometbft_rpc_url=node.rpc_url,
    )
    with running_chain(settings) as chain:
        for count in (3, 2):
            for _ in range(count):
                chain.post("/v1/receipts", json=receipt_body())
            seal(chain)
        first, second = wait_anchored(chain, 1), wait_anchored(chain, 2)

    rpc = CometRpc(node.rpc_url)
    try:
        for batch in (first, second):
            assert batch.anchor is not None
            assert batch.anchor.chain_id == node.chain_id()
            assert batch.anchor.tx_hash == hashlib.sha256(batch_anchor_tx(batch)).hexdigest()
            assert batch.anchor.proof["tx"]["tx_result"]["code"] == 0
            answer = rpc.query_batch(batch.batch_id)
            anchored = json.loads(base64.b64decode(answer["value"]))
            assert anchored["root"] == batch.root
            assert anchored["height"] == batch.anchor.height
        assert first.anchor is not None and second.anchor is not None
        assert first.anchor.height < second.anchor.height
        # the mempool cache or the application refuses it
        again = rpc.broadcast(batch_anchor_tx(first))
        assert again.code == Code.DUPLICATE or again.log == "already in the mempool cache"
    finally:
        rpc.close()


@pytest.mark.parametrize("sealed_by", ["route", "sealer"])
def test_a_batch_sealed_in_the_process_wakes_the_anchorer(
    sealed_by: str, node: LocalNode, chain_database: str, tmp_path: Path
) -> None:
    """The idle look is an hour away: only the seal's wake-up can anchor within seconds."""
    settings = chain_settings(
        chain_database,
        tmp_path,
        signing_key_file=tmp_path / "signing.pem",
        enabled=True,
        cometbft_rpc_url=node.rpc_url,
        anchor_idle_seconds=3600.0,
        batch_interval_seconds=0.5 if sealed_by == "sealer" else 3600.0,
    )
    with running_chain(settings) as chain:
        time.sleep(0.5)  # the anchorer's first round has found nothing and waits
        chain.post("/v1/receipts", json=receipt_body())
        if sealed_by == "route":
            seal(chain)
        deadline = time.monotonic() + 15
        while chain.get("/v1/batches/1").status_code == 404 or (
            chain.get("/v1/batches/1").json()["anchor"] is None
        ):
            assert time.monotonic() < deadline, "the sealed batch was not anchored"
            time.sleep(0.05)


class TestTheApplicationRefuses:
    def _tx(self, key: SigningKey, batch_id: int = 1, first_seq: int = 1) -> bytes:
        fields: dict[str, Any] = {
            "batch_id": batch_id,
            "first_seq": first_seq,
            "last_seq": first_seq + 1,
            "root": "a" * 64,
            "last_hash": "b" * 64,
        }
        return anchor_tx(
            **fields, public_key=key.public_key_hex, signature=key.sign(batch_message(**fields))
        )

    def test_what_is_not_a_trusted_in_order_canonical_anchor(
        self, node: LocalNode, signing_key: SigningKey, tmp_path: Path
    ) -> None:
        stranger = load_signing_key(tmp_path / "stranger.pem")
        good = self._tx(signing_key)
        forged = good.replace(b'"root":"aaaa', b'"root":"cccc')
        rpc = CometRpc(node.rpc_url)
        try:
            refusals = {
                "untrusted": rpc.broadcast(self._tx(stranger)),
                "forged": rpc.broadcast(forged),
                "spaced": rpc.broadcast(good.replace(b",", b", ")),
                "out_of_order": rpc.broadcast(self._tx(signing_key, batch_id=2, first_seq=3)),
                "not_json": rpc.broadcast(b"hello"),
            }
            accepted = rpc.broadcast(good)
        finally:
            rpc.close()

        assert {name: sent.code for name, sent in refusals.items()} == {
            "untrusted": 2,
            "forged": 3,
            "spaced": 1,
            "out_of_order": 5,
            "not_json": 1,
        }
        assert accepted.code == 0
