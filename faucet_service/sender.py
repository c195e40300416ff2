"""The mail sender: drains the queued outbox over SMTP, off the request path.

A sign-up only writes its email to the outbox (PostgreSQL is the queue) and answers; this
task sends it. It runs while the app serves, on a thread of its own (never one of the
shared worker threads, so a hanging SMTP server stalls neither requests nor ``/healthz``),
one message at a time: each attempt is bounded by ``FAUCET_SMTP_TIMEOUT_SECONDS``, a failed
one is retried after ``FAUCET_SMTP_RETRY_SECONDS`` (doubled per attempt), and after
``FAUCET_SMTP_MAX_ATTEMPTS`` the message is ``failed``. A sign-up wakes the sender at once;
otherwise it looks for due messages every ``FAUCET_SMTP_POLL_SECONDS``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email.message import EmailMessage

from fastapi import FastAPI

from faucet_service.errors import EmailDeliveryFailed
from faucet_service.mailer import send_by_smtp
from faucet_service.services.outbox import QueuedMessage, claim_due_message, record_attempt
from faucet_service.settings import FaucetSettings
from gridweave_runtime.database import Database
from gridweave_runtime.outbox_worker import OutboxWorker, running_worker, wake_worker

__all__ = ["MailSender", "sending_mail", "wake_mail_sender"]

_ATTRIBUTE = "mail_sender"  # where the app keeps it
_logger = logging.getLogger("gridweave")


class MailSender(OutboxWorker):
    """Sends the queued outbox, one message at a time, on a thread of its own."""

    label = "faucet: the mail sender"

    def __init__(self, database: Database, settings: FaucetSettings) -> None:
        super().__init__(poll_seconds=settings.smtp_poll_seconds)
        self.database = database
        self.settings = settings

    def deliver_round(self) -> bool:
        return self.send_one()

    def send_one(self) -> bool:
        """Claim one due message and try it; False when none was due."""
        lease = self.settings.smtp_timeout_seconds * 4 + 5  # connect, STARTTLS, login, send
        with self.database.session() as session:
            message = claim_due_message(session, lease_seconds=lease)
            if message is None:
                return False
            error: str | None = None
            try:
                send_by_smtp(self._email(message), self.settings)
            except EmailDeliveryFailed as exc:
                error = str(exc.details.get("smtp_error", exc.message))
            state = record_attempt(
                session,
                message,
                error=error,
                max_attempts=self.settings.smtp_max_attempts,
                retry_seconds=self.settings.smtp_retry_seconds,
            )
        if error is not None:
            _logger.warning("faucet: message %s not sent (%s): %s", message.id, error, state)
        return True

    def _email(self, message: QueuedMessage) -> EmailMessage:
        email = EmailMessage()
        email["From"] = self.settings.smtp_from
        email["To"] = message.recipient
        email["Subject"] = message.subject
        email.set_content(message.body)
        return email


def wake_mail_sender(app: FastAPI) -> None:
    """Tell the app's sender, if it has one, that a message was queued."""
    wake_worker(app, _ATTRIBUTE)


@asynccontextmanager
async def sending_mail(app: FastAPI) -> AsyncIterator[None]:
    """While the app serves: the sender, when an SMTP server is set (else nothing to send)."""
    settings: FaucetSettings = app.state.settings
    sender = None if settings.smtp_host is None else MailSender(app.state.database, settings)
    async with running_worker(app, _ATTRIBUTE, sender):
        yield
