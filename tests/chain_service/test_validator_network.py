"""Four validators on loopback: with one stopped, batches still commit and every node agrees."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chain_service.cometbft_rpc import CometRpc
from chain_service.node import LocalNode
from chain_service.signing import SigningKey, load_signing_key
from gridweave_clients.chain import verify_anchor
from gridweave_clients.chain.models import BatchResponse
from tests.chain_service.factories import chain_settings, receipt_body, running_chain, seal
from tests.support.cometbft import CometBFTUnavailable, validator_network
from tests.support.unavailable import fail_or_skip


@pytest.fixture
def signing_key(tmp_path: Path) -> SigningKey:
    return load_signing_key(tmp_path / "signing.pem")


@pytest.fixture
def network(tmp_path: Path, signing_key: SigningKey) -> Iterator[list[LocalNode]]:
    try:
        context = validator_network(tmp_path / "net", signing_key.public_key_hex)
        nodes = context.__enter__()
    except CometBFTUnavailable as exc:
        fail_or_skip("CometBFT", exc)
    try:
        yield nodes
    finally:
        context.__exit__(None, None, None)


def _anchored(chain: httpx.Client, batch_id: int) -> BatchResponse:
    deadline = time.monotonic() + 90
    while True:
        batch = BatchResponse.model_validate_json(chain.get(f"/v1/batches/{batch_id}").content)
        if batch.anchor is not None:
            return batch
        assert time.monotonic() < deadline, f"batch {batch_id} never anchored"
        time.sleep(0.1)


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
        _anchored(chain, first.batch_id)
        network[3].stop(kill=True)  # 3 of 4 validators: still more than two thirds
        chain.post("/v1/receipts", json=receipt_body())
        second = seal(chain)
        anchored = _anchored(chain, second.batch_id)

    assert anchored.anchor is not None and anchored.anchor.height > 0
    result = verify_anchor(anchored, trusted_validators=anchored.anchor.proof["validators"])
    assert result.ok, result.first_failure  # three or four of the four signed
    for node in network[:3]:
        assert _root_at(node, 1) == first.root
        assert _root_at(node, 2) == second.root
