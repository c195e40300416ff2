"""A worker that drains a service's outbox off the request path, on a thread of its own.

The outbox is a PostgreSQL table: a request queues its work there in its own transaction
and answers; the worker delivers it. Each round (one claim and its deliveries, on the
worker's own thread, never one of the shared worker threads, so a hanging downstream stalls
neither requests nor ``/healthz``) says whether more may be due at once; otherwise the
worker waits for a wake-up (a request that queued work, from any thread) or the poll
interval. A round that fails (the database away) is tried again after the interval, doubled
after each failure in a row up to ``FAILED_ROUND_MAX_WAIT_S``; the first failure of a run
is logged with its traceback, the next ones in a line each. The faucet's mail sender (in
the faucet's process, woken by each request) and metering's receipt deliverer (a process
of its own, polling) are such workers.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import ClassVar

import anyio
from anyio import CapacityLimiter, to_thread
from fastapi import FastAPI

__all__ = ["FAILED_ROUND_MAX_WAIT_S", "OutboxWorker", "running_worker", "wake_worker"]

#: the longest wait after failed rounds (a shorter poll interval doubles up to it)
FAILED_ROUND_MAX_WAIT_S = 5.0
_logger = logging.getLogger("gridweave")


class OutboxWorker(ABC):
    """Rounds of :meth:`deliver_round` until cancelled, woken early by :meth:`wake`."""

    #: who failed a round, in the log: "faucet: the mail sender"
    label: ClassVar[str]

    def __init__(self, *, poll_seconds: float) -> None:
        self.poll_seconds = poll_seconds
        self._thread = CapacityLimiter(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()

    @abstractmethod
    def deliver_round(self) -> bool:
        """Claim and deliver one round of due work; True when more may be due at once."""

    def wake(self) -> None:
        """Look for due work now (safe from any thread)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    async def run(self) -> None:
        """Deliver until cancelled; between idle rounds wait for a wake-up or the interval
        (longer after failed rounds)."""
        self._loop = asyncio.get_running_loop()
        failures = 0
        while True:
            self._wake.clear()
            try:
                more = await to_thread.run_sync(self.deliver_round, limiter=self._thread)
            except Exception as exc:  # the database away: log, wait, try again
                failures += 1
                if failures == 1:
                    _logger.warning("%s failed a round", self.label, exc_info=True)
                else:
                    _logger.warning("%s failed %d rounds in a row: %s", self.label, failures, exc)
                more = False
            else:
                failures = 0
            if not more:
                with anyio.move_on_after(self.wait_seconds(failures)):
                    await self._wake.wait()

    def wait_seconds(self, failures: int) -> float:
        """How long to wait for a wake-up after ``failures`` failed rounds in a row."""
        if failures == 0:
            return self.poll_seconds
        longest = max(self.poll_seconds, FAILED_ROUND_MAX_WAIT_S)
        return float(min(self.poll_seconds * 2 ** (failures - 1), longest))


def wake_worker(app: FastAPI, attribute: str) -> None:
    """Wake the app's worker kept at ``app.state.<attribute>``, if it runs."""
    worker: OutboxWorker | None = getattr(app.state, attribute, None)
    if worker is not None:
        worker.wake()


@asynccontextmanager
async def running_worker(
    app: FastAPI, attribute: str, worker: OutboxWorker | None
) -> AsyncIterator[None]:
    """While the app serves: ``worker`` running and kept at ``app.state.<attribute>``.

    ``None`` (the service has nowhere to deliver to): nothing runs, the work waits queued.
    """
    if worker is None:
        yield
        return
    setattr(app.state, attribute, worker)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(worker.run)
        try:
            yield
        finally:
            tasks.cancel_scope.cancel()
            setattr(app.state, attribute, None)
