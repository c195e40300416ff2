"""The anchorer (``CHAIN_ENABLED``): each sealed batch's root committed to CometBFT, in order.

One batch at a time, lowest first: its anchor transaction (``encoding.anchor_tx``, the
same bytes however often it is built) is looked for in the chain by its hash, sent when
absent, and waited for; then its height, transaction hash and the node's inclusion proof
are stored with the batch. After a crash anywhere in between, the next round finds the
transaction in the chain (or in the mempool cache) and only records it: a batch is
anchored once, and batch n + 1 never before batch n (the application refuses it).

It runs as an outbox worker on a thread of its own: a batch sealed in this process (by the
sealer or ``POST /v1/batches``) wakes it; otherwise it looks every
``CHAIN_ANCHOR_IDLE_SECONDS`` (for batches another replica sealed, or after the node or the
database was away). Only a sent anchor is polled for at the short
``CHAIN_ANCHOR_POLL_SECONDS``: an idle anchorer asking the database 20 times a second cost
CPU the settlement path of the same machine would have had.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from chain_service.cometbft_rpc import CometRpc, CometRpcError
from chain_service.services.anchors import next_unanchored_batch, record_anchor
from chain_service.settings import ChainSettings
from gridweave_clients.chain.encoding import batch_anchor_tx
from gridweave_runtime.database import Database
from gridweave_runtime.outbox_worker import OutboxWorker, running_worker, wake_worker

__all__ = ["BatchAnchorer", "anchoring_batches", "wake_anchorer"]

_ATTRIBUTE = "batch_anchorer"  # where the app keeps it

_logger = logging.getLogger("gridweave")


class BatchAnchorer(OutboxWorker):
    """Anchors the sealed batches in CometBFT, one at a time, in order."""

    label = "chain: the anchorer"

    def __init__(self, database: Database, settings: ChainSettings, rpc: CometRpc) -> None:
        super().__init__(poll_seconds=settings.anchor_idle_seconds)
        self.database = database
        self.settings = settings
        self.rpc = rpc
        self._chain_id: str | None = None

    def deliver_round(self) -> bool:
        return self.anchor_next()  # one anchored: the next may be waiting

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
            tx = batch_anchor_tx(batch)
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


def wake_anchorer(app: FastAPI) -> None:
    """Tell the app's anchorer, if it runs, that a batch was sealed."""
    wake_worker(app, _ATTRIBUTE)


@asynccontextmanager
async def anchoring_batches(app: FastAPI) -> AsyncIterator[None]:
    """While the app serves: the anchorer, when ``CHAIN_ENABLED``."""
    settings: ChainSettings = app.state.settings
    if not settings.enabled:
        yield
        return
    rpc = CometRpc(settings.cometbft_rpc_url, timeout=settings.anchor_timeout_seconds)
    try:
        async with running_worker(
            app, _ATTRIBUTE, BatchAnchorer(app.state.database, settings, rpc)
        ):
            yield
    finally:
        rpc.close()
