"""A full audit through ChainClient over real HTTP: page by page, batch by batch."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import text

from gridweave_clients.chain import ChainClient, Step, audit_chain
from tests.chain_service.factories import receipt_body, seal, tampering
from tests.support.credit_server import INTERNAL_TOKEN


@pytest.fixture
def client(chain: httpx.Client) -> Iterator[ChainClient]:
    with ChainClient(str(chain.base_url), INTERNAL_TOKEN) as typed:
        yield typed


def _three_batches(chain: httpx.Client) -> str:
    for count in (3, 1, 4):
        for _ in range(count):
            chain.post("/v1/receipts", json=receipt_body())
        key = seal(chain).public_key
    chain.post("/v1/receipts", json=receipt_body())  # the unsealed tail is audited too
    return key


def test_a_clean_chain_passes_across_pages_and_batches(
    chain: httpx.Client, client: ChainClient
) -> None:
    key = _three_batches(chain)

    result = audit_chain(client, trusted_public_key=key, page_size=3)

    assert result.ok, result.first_failure
    assert sum(step.step == Step.BATCH_ROOT for step in result.steps) == 3
    assert sum(step.step == Step.CHAIN_LINK for step in result.steps) == 9


def test_a_receipt_removed_from_the_middle_is_named(
    chain: httpx.Client, client: ChainClient, chain_database: str
) -> None:
    key = _three_batches(chain)
    with tampering(chain_database) as db:
        db.execute(text("DELETE FROM receipts WHERE seq = 5"))

    result = audit_chain(client, trusted_public_key=key, page_size=3)

    assert result.first_failure is not None
    assert result.first_failure.step == Step.CHAIN_LINK
    assert result.first_failure.detail == "receipt 6 comes after receipt 4"
    assert Step.BATCH_ROOT in result.failed_steps
