"""The batch sealer: every ``CHAIN_BATCH_INTERVAL_SECONDS``, the receipts not in a batch yet
are sealed into one (several when more than ``CHAIN_BATCH_MAX_RECEIPTS`` wait).

It runs while the app serves, on a thread of its own. Several replicas may run it: sealing
takes an advisory lock, and the batches' constraints refuse an overlap anyway.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
from anyio import CapacityLimiter, to_thread
from fastapi import FastAPI

from chain_service.anchorer import anchoring_batches, wake_anchorer
from chain_service.services.batches import seal_batch
from chain_service.settings import ChainSettings
from chain_service.signing import SigningKey
from gridweave_runtime.database import Database

__all__ = ["BatchSealer", "sealing_batches"]

_logger = logging.getLogger("gridweave")


class BatchSealer:
    """Seals the waiting receipts into batches on an interval."""

    def __init__(
        self,
        database: Database,
        settings: ChainSettings,
        key: SigningKey,
        on_sealed: Callable[[], None] = lambda: None,
    ) -> None:
        self.database = database
        self.settings = settings
        self.key = key
        self.on_sealed = on_sealed  # safe from any thread: wakes the anchorer
        self._thread = CapacityLimiter(1)

    def seal_waiting(self) -> int:
        """Seal every waiting receipt (in batches of at most the maximum); how many batches."""
        sealed = 0
        while True:
            with self.database.session() as session:
                batch = seal_batch(
                    session, key=self.key, max_receipts=self.settings.batch_max_receipts
                )
            if batch is None:
                return sealed
            sealed += 1
            self.on_sealed()
            if batch.leaf_count < self.settings.batch_max_receipts:
                return sealed

    async def run(self) -> None:
        """Seal on the interval until cancelled."""
        while True:
            await anyio.sleep(self.settings.batch_interval_seconds)
            try:
                await to_thread.run_sync(self.seal_waiting, limiter=self._thread)
            except Exception:  # the database away: log and try at the next interval
                _logger.warning("chain: sealing a batch failed", exc_info=True)


@asynccontextmanager
async def sealing_batches(app: FastAPI) -> AsyncIterator[None]:
    """While the app serves: the batch sealer, and the anchorer when ``CHAIN_ENABLED``."""
    sealer = BatchSealer(
        app.state.database, app.state.settings, app.state.signing_key, lambda: wake_anchorer(app)
    )
    async with anchoring_batches(app), anyio.create_task_group() as tasks:
        tasks.start_soon(sealer.run)
        try:
            yield
        finally:
            tasks.cancel_scope.cancel()
