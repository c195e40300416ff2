"""``python -m chain_service.node``: a local validator for the all-in-one, stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import psutil

from chain_service.cometbft_rpc import CometRpc
from chain_service.signing import SigningKey, load_signing_key
from gridweave_clients.chain.encoding import anchor_tx, batch_message
from tests.support.cometbft import CometBFTUnavailable, cometbft_binary
from tests.support.http_server import free_port
from tests.support.service_process import thread_niceness
from tests.support.unavailable import fail_or_skip


def _tx(key: SigningKey) -> bytes:
    fields: dict[str, Any] = {
        "batch_id": 1,
        "first_seq": 1,
        "last_seq": 1,
        "root": "a" * 64,
        "last_hash": "b" * 64,
    }
    return anchor_tx(
        **fields, public_key=key.public_key_hex, signature=key.sign(batch_message(**fields))
    )


def test_it_runs_a_node_trusting_chain_services_key_until_sigterm(tmp_path: Path) -> None:
    try:
        binary = cometbft_binary()
    except CometBFTUnavailable as exc:
        fail_or_skip("CometBFT", exc)
    rpc, abci = free_port(), free_port()
    command = [
        sys.executable,
        "-m",
        "chain_service.node",
        "--binary",
        str(binary),
        "--rpc-port",
        str(rpc),
        "--p2p-port",
        str(free_port()),
        "--abci-port",
        str(abci),
    ]
    env = {**os.environ, "GRIDWEAVE_STATE_DIR": str(tmp_path)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        # the application and cometbft, every thread: CHAIN_NICENESS's default
        children = {c.pid: thread_niceness(c.pid) for c in psutil.Process(process.pid).children()}
        environments = [c.environ() for c in psutil.Process(process.pid).children()]
        status = httpx.get(f"http://127.0.0.1:{rpc}/status", timeout=5).json()["result"]
        key = load_signing_key(tmp_path / "chain" / "batch-signing-key.pem")  # the node's
        stranger = load_signing_key(tmp_path / "stranger.pem")
        node = CometRpc(f"http://127.0.0.1:{rpc}")
        try:
            trusted, refused = node.broadcast(_tx(key)), node.broadcast(_tx(stranger))
        finally:
            node.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()

    assert line.strip() == f"CHAIN_COMETBFT_RPC_URL=http://127.0.0.1:{rpc}"
    assert int(status["sync_info"]["latest_block_height"]) >= 1
    assert list(children.values()) == [{10}, {10}]
    # cometbft on one scheduler thread (its idle consensus ticker costs half as much)
    assert [each.get("GOMAXPROCS") for each in environments] == [None, "1"]
    assert (trusted.code, refused.code) == (0, 2)  # it trusts chain_service's key only
    with socket.socket() as probe:  # the application is gone too
        assert probe.connect_ex(("127.0.0.1", abci)) != 0
