"""The receipt deliverer: sends the receipt outbox to chain_service, off the request path.

Runs while the app serves (when ``CHAIN_SERVICE_URL`` is set), on a thread of its own: it
claims up to ``METERING_RECEIPT_BATCH_SIZE`` due receipts, sends them in one call, in order,
and records each outcome (``services.receipts``). chain_service away: the receipt waits,
retried with a doubling backoff (never given up). chain_service refusing it (a conflicting
receipt of the same settlement, a malformed one): ``refused``, logged for an operator. A
settlement wakes it, and it waits ``METERING_RECEIPT_LINGER_SECONDS`` more so that the
receipts of the settlements meanwhile go in the same call; otherwise it looks every
``METERING_RECEIPT_POLL_SECONDS``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from sqlalchemy.orm import Session

from gridweave_clients.chain import ChainClient
from gridweave_clients.chain.models import RecordReceiptsRequest
from gridweave_clients.errors import ServiceRefused, ServiceUnavailable
from gridweave_runtime.database import Database
from gridweave_runtime.outbox_worker import OutboxWorker, running_worker, wake_worker
from metering_service.services.receipts import (
    ClaimedReceipt,
    claim_due_receipts,
    record_deliveries,
    record_delivery,
)
from metering_service.settings import MeteringSettings

__all__ = ["ReceiptDeliverer", "delivering_receipts", "wake_receipt_deliverer"]

_ATTRIBUTE = "receipt_deliverer"  # where the app keeps it
_logger = logging.getLogger("gridweave")


class ReceiptDeliverer(OutboxWorker):
    """Delivers the queued receipts to chain_service on a thread of its own."""

    label = "metering: the receipt deliverer"

    def __init__(self, database: Database, settings: MeteringSettings, chain: ChainClient) -> None:
        super().__init__(
            poll_seconds=settings.receipt_poll_seconds,
            linger_seconds=settings.receipt_linger_seconds,
        )
        self.database = database
        self.settings = settings
        self.chain = chain

    def deliver_round(self) -> bool:
        return self.deliver_due() >= self.settings.receipt_batch_size  # a full round: more due

    def deliver_due(self) -> int:
        """Claim and deliver one round of due receipts; how many were claimed.

        The round goes in one call (one transaction and one commit on chain_service's
        side); when chain_service refuses it, each receipt is sent alone, so only the
        refused one is set aside.
        """
        settings = self.settings
        # The lease outlasts the round's one call even if it times out, so a killed
        # deliverer's receipts wait seconds, not minutes. A round that falls back to one
        # call per receipt may outlast it; another deliverer then sends some of them again,
        # which chain_service answers as replays: a lease only saves work, never a receipt.
        lease = settings.receipt_timeout_seconds * 2 + 1
        with self.database.session() as session:
            claimed = claim_due_receipts(
                session, limit=settings.receipt_batch_size, lease_seconds=lease
            )
            if not claimed:
                return 0
            try:
                answer = self.chain.record_receipts(
                    RecordReceiptsRequest(receipts=[item.request for item in claimed])
                )
            except ServiceUnavailable as exc:
                self._retry_later(session, claimed, str(exc))
            except ServiceRefused:
                self._deliver_one_by_one(session, claimed)
            else:
                record_deliveries(session, claimed, [r.seq for r in answer.receipts])
        return len(claimed)

    def _retry_later(self, session: Session, claimed: list[ClaimedReceipt], error: str) -> None:
        for waiting in claimed:
            record_delivery(
                session,
                waiting,
                error=error,
                retry_seconds=self.settings.receipt_retry_seconds,
                max_retry_seconds=self.settings.receipt_max_retry_seconds,
            )

    def _deliver_one_by_one(self, session: Session, claimed: list[ClaimedReceipt]) -> None:
        for index, item in enumerate(claimed):
            try:
                receipt = self.chain.record_receipt(item.request)
            except ServiceUnavailable as exc:
                self._retry_later(session, claimed[index:], str(exc))
                return
            except ServiceRefused as exc:
                _logger.error(
                    "metering: chain_service refused the receipt of %s: %s",
                    item.request.hold_reference,
                    exc,
                )
                record_delivery(session, item, error=f"{exc.code}: {exc}", refused=True)
            else:
                record_delivery(session, item, receipt_seq=receipt.seq)


def wake_receipt_deliverer(app: FastAPI) -> None:
    """Tell the app's deliverer, if it has one, that a receipt was queued."""
    wake_worker(app, _ATTRIBUTE)


@asynccontextmanager
async def delivering_receipts(app: FastAPI) -> AsyncIterator[None]:
    """While the app serves: the deliverer, when chain_service is set (else receipts wait)."""
    chain: ChainClient | None = getattr(app.state, "chain_client", None)
    deliverer = (
        None if chain is None else ReceiptDeliverer(app.state.database, app.state.settings, chain)
    )
    async with running_worker(app, _ATTRIBUTE, deliverer):
        yield
