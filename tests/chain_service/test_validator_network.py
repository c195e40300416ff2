"""Four validators on loopback: with one stopped, batches still commit and every node agrees."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chain_service.cometbft_rpc import CometRpc
from chain_service.node import LocalNode
from chain_service.signing import SigningKey
from gridweave_clients.chain import verify_anchor
from tests.chain_service.factories import (
    chain_settings,
    receipt_body,
    running_chain,
    seal,
    wait_anchored,
)
from tests.support.cometbft import started_or_skip, validator_network


@pytest.fixture
def network(tmp_path: Path, signing_key: SigningKey) -> Iterator[list[LocalNode]]:
    with started_or_skip(validator_network(tmp_path / "net", signing_key.public_key_hex)) as nodes:
        yield nodes


def _root_at(node: LocalNode, batch_id: int) -> str | None:
    rpc = CometRpc(node.rpc_url)
    try:
        deadline = time.monotonic() + 30
        while (answer := rpc.query_batch(batch_id))["code"] != 0:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)
    finally:
        rpc.close()
    return str(json.loads(base64.b64decode(answer["value"]))["root"])


def test_batches_commit_with_one_validator_of_four_stopped(
    network: list[LocalNode], signing_key: SigningKey, chain_database: str, tmp_path: Path
) -> None:
    settings = chain_settings(
        chain_database,
        tmp_path,
        signing_key_file=tmp_path / "signing.pem",
        enabled=True,
        cometbft_rpc_url=network[0].rpc_url,
    )
    with running_chain(settings) as chain:
        chain.post("/v1/receipts", json=receipt_body())
        first = seal(chain)
        wait_anchored(chain, first.batch_id, timeout_s=90, poll_s=0.1)
        network[3].stop(kill=True)  # 3 of 4 validators: still more than two thirds
        chain.post("/v1/receipts", json=receipt_body())
        second = seal(chain)
        anchored = wait_anchored(chain, second.batch_id, timeout_s=90, poll_s=0.1)

    assert anchored.anchor is not None and anchored.anchor.height > 0
    result = verify_anchor(anchored, trusted_validators=anchored.anchor.proof["validators"])
    assert result.ok, result.first_failure  # three or four of the four signed
    for node in network[:3]:
        assert _root_at(node, 1) == first.root
        assert _root_at(node, 2) == second.root
