"""chain_service and CometBFT killed and restarted mid-stream: batches anchored once, in order."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text

from chain_service.cometbft_rpc import CometRpc
from chain_service.node import LocalNode
from chain_service.signing import SigningKey
from gridweave_clients.chain.encoding import anchor_tx
from gridweave_clients.chain.models import BatchResponse
from tests.chain_service.factories import receipt_body, wait_anchored
from tests.support.credentials import service_auth_env
from tests.support.credit_server import AUTH_HEADERS, INTERNAL_TOKEN
from tests.support.http_server import free_port

_DEADLINE_S = 90.0


class ChainProcess:
    """``python -m chain_service`` on a fixed port, killable with SIGKILL."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log = env, log
        self.url = f"http://127.0.0.1:{env['CHAIN_PORT']}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "chain_service"],
                env={**os.environ, **self.env},
                stdout=output,
                stderr=output,
            )
        deadline = time.monotonic() + _DEADLINE_S
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.1)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=AUTH_HEADERS, timeout=30)


def _sealed_tx(database_url: str, batch_id: int) -> bytes:
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            row = connection.execute(
                text(
                    "SELECT batch_id, first_seq, last_seq, root, last_hash, public_key, "
                    "signature FROM batches WHERE batch_id = :id"
                ),
                {"id": batch_id},
            ).one()
    finally:
        engine.dispose()
    return anchor_tx(**row._asdict())


def _append_and_seal(client: httpx.Client, count: int) -> BatchResponse:
    for _ in range(count):
        assert client.post("/v1/receipts", json=receipt_body()).status_code == 201
    return BatchResponse.model_validate(client.post("/v1/batches").json()["batch"])


def test_kills_and_restarts_leave_each_batch_anchored_once_in_order(
    node: LocalNode, signing_key: SigningKey, chain_database: str, tmp_path: Path
) -> None:
    chain = ChainProcess(
        {
            "CHAIN_DATABASE_URL": chain_database,
            "CHAIN_PORT": str(free_port()),
            "CHAIN_SIGNING_KEY_FILE": str(tmp_path / "signing.pem"),
            "CHAIN_ENABLED": "true",
            "CHAIN_COMETBFT_RPC_URL": node.rpc_url,
            "CHAIN_BATCH_INTERVAL_SECONDS": "3600",
            **service_auth_env(INTERNAL_TOKEN),
            "GRIDWEAVE_STATE_DIR": str(tmp_path),
        },
        tmp_path / "chain.log",
    )
    chain.start()
    try:
        with chain.client() as client:
            _append_and_seal(client, 3)
            wait_anchored(client, 1, timeout_s=_DEADLINE_S, poll_s=0.1)
            node.stop(kill=True)  # CometBFT and the application: SIGKILL
            _append_and_seal(client, 2)  # batch 2 waits for the node
        chain.kill()
        node.start()
        # as if chain_service had sent batch 2's anchor just before it died: read from its
        # database while it is down, and sent; the restarted anchorer must only record it
        rpc = CometRpc(node.rpc_url)
        try:
            assert rpc.broadcast(_sealed_tx(chain_database, 2)).code == 0
            chain.start()
            with chain.client() as client:
                _append_and_seal(client, 4)
                batches = [
                    wait_anchored(client, batch_id, timeout_s=_DEADLINE_S, poll_s=0.1)
                    for batch_id in (1, 2, 3)
                ]
            answers = [rpc.query_batch(batch_id) for batch_id in (1, 2, 3, 4)]
        finally:
            rpc.close()
    finally:
        if chain.process is not None and chain.process.poll() is None:
            chain.kill()

    heights = [batch.anchor.height for batch in batches if batch.anchor is not None]
    assert heights == sorted(heights) and len(set(heights)) == 3
    anchored = [json.loads(base64.b64decode(answer["value"])) for answer in answers[:3]]
    assert [a["height"] for a in anchored] == heights
    assert [a["root"] for a in anchored] == [batch.root for batch in batches]
    assert [(a["first_seq"], a["last_seq"]) for a in anchored] == [(1, 3), (4, 5), (6, 9)]
    assert answers[3]["code"] == 6  # NOT_FOUND: nothing anchored beyond batch 3
