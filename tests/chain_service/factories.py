"""Factories and helpers of the chain_service tests: defaults in one place."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from chain_service.app import create_app
from chain_service.settings import ChainSettings
from gridweave_clients.chain.models import (
    BatchResponse,
    ChainPageResponse,
    ReceiptProofResponse,
)
from tests.support.credentials import service_auth
from tests.support.credit_server import AUTH_HEADERS, INTERNAL_TOKEN
from tests.support.http_server import running_service


def unique(prefix: str) -> str:
    """A fresh id, so tests sharing a module's databases never collide."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def receipt_body(hold_reference: str | None = None, **overrides: Any) -> dict[str, Any]:
    """A valid receipt: a 10-second job on one 24 GiB NVIDIA GPU, settled in full."""
    job_id = hold_reference or unique("job")
    return {
        "kind": "job",
        "subject_id": job_id,
        "hold_reference": job_id,
        "user_id": "alice",
        "owner_id": "alice",
        "node": "node-a",
        "vendor": "nvidia",
        "gpu_model": "NVIDIA L4",
        "gpu_count": 1,
        "vram_mb": 24_576,
        "started_at": "2026-12-03T07:00:00.250000Z",
        "finished_at": "2026-12-03T07:00:10.250000Z",
        "wall_microseconds": 10_000_000,
        "billed_seconds": 10,
        "price_per_gpu_second": 150,
        "cost": 1_500,
        "charged": 1_500,
        "settled_at": "2026-12-03T07:00:11Z",
        "result_ref_sha256": "ab" * 32,
        **overrides,
    }


def chain_settings(database_url: str, state_dir: Path, **overrides: Any) -> ChainSettings:
    """Settings for a chain_service on ``database_url`` (the sealer slow unless overridden)."""
    values: dict[str, Any] = {
        "database_url": database_url,
        **service_auth(INTERNAL_TOKEN),
        "state_dir": state_dir,
        "batch_interval_seconds": 3600.0,
        **overrides,
    }
    return ChainSettings(**values)


def running_chain(
    settings: ChainSettings, *, port: int | None = None
) -> AbstractContextManager[httpx.Client]:
    """chain_service served on a loopback port (``port`` or a free one); a client with the token."""
    return running_service(create_app(settings), AUTH_HEADERS, port=port)


def seal(client: httpx.Client) -> BatchResponse:
    """Seal the waiting receipts now; the batch (there must be one)."""
    response = client.post("/v1/batches")
    assert response.status_code == 200, response.text
    batch = response.json()["batch"]
    assert batch is not None
    return BatchResponse.model_validate(batch)


def wait_anchored(
    client: httpx.Client, batch_id: int, *, timeout_s: float = 60.0, poll_s: float = 0.05
) -> BatchResponse:
    """The batch once its anchor is recorded; fails the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = client.get(f"/v1/batches/{batch_id}")
        assert answer.status_code == 200, answer.text
        batch = BatchResponse.model_validate_json(answer.content)
        if batch.anchor is not None:
            return batch
        assert time.monotonic() < deadline, f"batch {batch_id} never anchored"
        time.sleep(poll_s)


def proof_of(client: httpx.Client, seq: int) -> ReceiptProofResponse:
    """The receipt at ``seq`` with its proof."""
    response = client.get(f"/v1/receipts/{seq}")
    assert response.status_code == 200, response.text
    return ReceiptProofResponse.model_validate_json(response.content)


def whole_chain(client: httpx.Client) -> ChainPageResponse:
    """Every receipt (one page of up to 1,000)."""
    response = client.get("/v1/chain", params={"limit": 1000})
    assert response.status_code == 200, response.text
    return ChainPageResponse.model_validate_json(response.content)


@contextmanager
def tampering(database_url: str) -> Iterator[Any]:
    """A connection with the append-only triggers off, as an intruder with the owner's role."""
    engine = create_engine(database_url)
    try:
        with engine.begin() as connection:
            connection.execute(text("ALTER TABLE receipts DISABLE TRIGGER USER"))
            connection.execute(text("ALTER TABLE batches DISABLE TRIGGER USER"))
            yield connection
            connection.execute(text("ALTER TABLE receipts ENABLE TRIGGER USER"))
            connection.execute(text("ALTER TABLE batches ENABLE TRIGGER USER"))
    finally:
        engine.dispose()
