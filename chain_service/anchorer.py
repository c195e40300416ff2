"""The anchorer (``CHAIN_ENABLED``): each sealed batch's root committed to CometBFT, in order.

One batch at a time, lowest first: its anchor transaction (``encoding.anchor_tx``, the
same bytes however often it is built) is looked for in the chain by its hash, sent when
absent, and waited for; then its height, transaction hash and the node's inclusion proof
are stored with the batch. After a crash anywhere in between, the next round finds the
transaction in the chain (or in the mempool cache) and only records it: a batch is
anchored once, and batch n + 1 never before batch n (the application refuses it).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio import CapacityLimiter, to_thread
from fastapi import FastAPI

from chain_service.cometbft_rpc import CometRpc, CometRpcError
from chain_service.services.anchors import next_unanchored_batch, record_anchor
from chain_service.settings import ChainSettings
from gridweave_clients.chain.encoding import anchor_tx
from gridweave_runtime.database import Database

__all__ = ["BatchAnchorer", "anchoring_batches"]

_logger = logging.getLogger("gridweave")


class BatchAnchorer:
    """Anchors the sealed batches in CometBFT, one at a time, in order."""

    def __init__(self, database: Database, settings: ChainSettings, rpc: CometRpc) -> None:
        self.database = database
        self.settings = settings
        self.rpc = rpc
        self._thread = CapacityLimiter(1)
        self._chain_id: str | None = None

    def anchor_next(self) -> bool:
        """Anchor the lowest unanchored batch; False when there is none.

        Raises:
            CometRpcError: the node is away or refused the transaction (tried again later).
        """
        with self.database.session() as session:
            batch = next_unanchored_batch(session)
            session.commit()
            if batch is None:
                return False
            tx = anchor_tx(
                batch_id=batch.batch_id,
                first_seq=batch.first_seq,
                last_seq=batch.last_seq,
                root=batch.root,
                last_hash=batch.last_hash,
                public_key=batch.public_key,
                signature=batch.signature,
            )
            tx_hash = hashlib.sha256(tx).hexdigest()
            found = self.rpc.find_tx(tx_hash)
            if found is None:
                sent = self.rpc.broadcast(tx)
                if sent.code != 0 and "anchored already" not in sent.log:
                    raise CometRpcError(f"batch {batch.batch_id} refused: {sent.log}")
                found = self._wait_for(tx_hash)
            if self._chain_id is None:
                self._chain_id = self.rpc.chain_id()
            height = int(found["height"])
            record_anchor(
                session,
                batch_id=batch.batch_id,
                chain_id=self._chain_id,
                height=height,
                tx_hash=tx_hash,
                # what a verifier needs offline: gridweave_clients.chain.cometbft
                proof={
                    "tx": {"proof": found["proof"], "tx_result": found["tx_result"]},
                    "signed_header": self.rpc.signed_header(height),
                    "validators": self.rpc.validators(height),
                },
            )
        return True

    def _wait_for(self, tx_hash: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.settings.anchor_timeout_seconds
        while (found := self.rpc.find_tx(tx_hash)) is None:
            if time.monotonic() > deadline:
                raise CometRpcError(f"anchor {tx_hash} not committed in time")
            time.sleep(self.settings.anchor_poll_seconds)
        return found

    def anchor_waiting(self) -> int:
        """Anchor every waiting batch, in order; how many."""
        anchored = 0
        while self.anchor_next():
            anchored += 1
        return anchored

    async def run(self) -> None:
        """Anchor batches as they are sealed, until cancelled."""
        while True:
            try:
                await to_thread.run_sync(self.anchor_waiting, limiter=self._thread)
            except Exception as exc:  # the node or the database away: wait, try again
                _logger.warning("chain: anchoring failed (%s); trying again", exc)
                await anyio.sleep(1.0)
            await anyio.sleep(self.settings.anchor_poll_seconds)


@asynccontextmanager
async def anchoring_batches(app: FastAPI) -> AsyncIterator[None]:
    """While the app serves: the anchorer, when ``CHAIN_ENABLED``."""
    settings: ChainSettings = app.state.settings
    if not settings.enabled:
        yield
        return
    rpc = CometRpc(settings.cometbft_rpc_url, timeout=settings.anchor_timeout_seconds)
    anchorer = BatchAnchorer(app.state.database, settings, rpc)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(anchorer.run)
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()
    finally:
        rpc.close()
