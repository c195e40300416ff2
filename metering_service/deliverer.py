"""The receipt deliverer: a process of its own that sends the receipt outbox to chain_service.

``python -m metering_service.deliverer`` (``gridweave-metering-deliverer``), beside the
metering_service API, on the same ``METERING_*`` settings and ``CHAIN_SERVICE_URL``. Each
round claims up to ``METERING_RECEIPT_BATCH_SIZE`` due receipts, sends them in one call, in
order, and records each outcome (``services.receipts``); a full round is followed by the
next at once, otherwise it looks again every ``METERING_RECEIPT_POLL_SECONDS``.
chain_service away: the receipt waits, retried with a doubling backoff (never given up).
chain_service refusing it (a conflicting receipt of the same settlement, a malformed one):
``refused``, logged for an operator.

Why a process, and why it polls: the API process is the settlement path's one interpreter,
so a deliverer inside it (building requests, parsing answers, marking rows) took that
interpreter from the settling requests. Nothing on the settlement path tells the deliverer
a receipt was queued: a ``NOTIFY`` in the settling transaction would take PostgreSQL's
notification lock through every settling commit (notifying commits are serialized), and
the receipt's outbox row, written in that transaction, is then the chain's only cost there.
A poll is one indexed query (``ix_receipt_outbox_due``) per interval, and the receipts
queued meanwhile go in one call. Any number of deliverers may run: claims skip locked rows.
"""

from __future__ import annotations

import logging
import signal

import anyio
import httpx
from sqlalchemy.orm import Session

from gridweave_clients import RetryPolicy
from gridweave_clients.chain import ChainClient
from gridweave_clients.chain.models import RecordReceiptsRequest
from gridweave_clients.errors import ServiceRefused, ServiceUnavailable
from gridweave_runtime.app import ConfigurationError, open_service_database
from gridweave_runtime.database import Database
from gridweave_runtime.outbox_worker import OutboxWorker
from gridweave_runtime.postgres import stop_embedded_server
from gridweave_runtime.priority import lower_priority
from metering_service.services.receipts import (
    ClaimedReceipt,
    claim_due_receipts,
    record_deliveries,
    record_delivery,
)
from metering_service.settings import DATABASE_NAME, MeteringSettings

__all__ = ["CHAIN_ROLE", "ReceiptDeliverer", "create_deliverer", "main", "run_deliverer"]

#: the role metering's calls to chain_service carry
CHAIN_ROLE = "metering"
_logger = logging.getLogger("gridweave")


class ReceiptDeliverer(OutboxWorker):
    """Delivers the queued receipts to chain_service, round after round."""

    label = "metering: the receipt deliverer"

    def __init__(self, database: Database, settings: MeteringSettings, chain: ChainClient) -> None:
        super().__init__(poll_seconds=settings.receipt_poll_seconds)
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


def create_deliverer(
    settings: MeteringSettings, *, chain_transport: httpx.BaseTransport | None = None
) -> ReceiptDeliverer:
    """A deliverer on metering's database (migrated by the API, not here) and chain_service.

    Raises:
        ConfigurationError: ``CHAIN_SERVICE_URL`` or ``GRIDWEAVE_SERVICE_TOKEN`` is unset.
    """
    if settings.chain_service_url is None:
        raise ConfigurationError("metering deliverer: CHAIN_SERVICE_URL must be set")
    try:
        token = settings.own_token()
    except ValueError as exc:
        raise ConfigurationError(f"metering deliverer: {exc}") from None
    chain = ChainClient(
        settings.chain_service_url,
        token,
        role=CHAIN_ROLE,
        timeout=settings.receipt_timeout_seconds,
        retry=RetryPolicy(attempts=1),  # the outbox retries, with its backoff
        transport=chain_transport,
    )
    database = open_service_database(settings, database=DATABASE_NAME, migrations_dir=None)
    return ReceiptDeliverer(database, settings, chain)


async def run_deliverer(deliverer: ReceiptDeliverer) -> None:
    """Deliver until SIGTERM or SIGINT; a round under way is finished first. The start is
    logged once the signals are listened to: from that line on, SIGTERM stops it cleanly."""
    async with anyio.create_task_group() as tasks:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            tasks.start_soon(deliverer.run)
            _logger.info(
                "metering: delivering receipts to %s", deliverer.settings.chain_service_url
            )
            async for _ in signals:
                # the round runs on a thread anyio does not abandon: cancelling waits for it
                tasks.cancel_scope.cancel()
                break


def main() -> None:
    """Run the receipt deliverer until SIGTERM or SIGINT."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    settings = MeteringSettings()
    deliverer = create_deliverer(settings)
    # after the database is open: an embedded PostgreSQL it starts keeps the usual priority
    lower_priority(settings.receipt_niceness)
    try:
        anyio.run(run_deliverer, deliverer)
    finally:
        deliverer.chain.close()
        deliverer.database.dispose()
        if settings.database_url is None:
            stop_embedded_server(settings.state_dir)


if __name__ == "__main__":
    main()
