"""The outbox: every verification email, kept for the operator or queued for the sender.

With no SMTP server set, a message is ``kept`` and the operator reads it. Otherwise it is
``queued`` and ``faucet_service.sender`` sends it off the request path: it claims one due
message (``FOR UPDATE SKIP LOCKED``, so several processes share the queue), leases it for
the length of one attempt, sends it, then records the outcome. A sender that dies
mid-attempt leaves the lease to run out, and the message is tried again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from email.message import EmailMessage
from typing import Literal

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from faucet_service.models import OutboxMessageModel, OutboxState
from faucet_service.settings import FaucetSettings
from gridweave_clients.faucet.models import OutboxMessageResponse, OutboxPageResponse

__all__ = [
    "QueuedMessage",
    "claim_due_message",
    "list_outbox_messages",
    "queue_code_email",
    "record_attempt",
    "write_to_outbox",
]

#: What a sent or failed message's body becomes: the code is not kept once it is out.
_BLANKED = "(not kept once delivered or given up)"
_ERROR_LENGTH = 200


def write_to_outbox(session: Session, message: EmailMessage, *, queued: bool) -> None:
    """Keep ``message`` in the outbox, ``queued`` for the sender or ``kept`` (flushes)."""
    session.add(
        OutboxMessageModel(
            recipient=str(message["To"]),
            subject=str(message["Subject"]),
            body=str(message.get_content()),
            state=OutboxState.QUEUED if queued else OutboxState.KEPT,
            next_attempt_at=func.now() if queued else None,
        )
    )
    session.flush()


def queue_code_email(
    session: Session, message: EmailMessage, *, settings: FaucetSettings
) -> Literal["smtp", "outbox"]:
    """Queue a code's email for the sender (an SMTP server is set) or keep it; commits. How
    it will reach its recipient."""
    queued = settings.smtp_host is not None
    write_to_outbox(session, message, queued=queued)
    session.commit()
    return "smtp" if queued else "outbox"


@dataclass(frozen=True)
class QueuedMessage:
    """A message claimed for one sending attempt."""

    id: int
    recipient: str
    subject: str
    body: str
    attempts: int


def claim_due_message(session: Session, *, lease_seconds: float) -> QueuedMessage | None:
    """Claim the oldest due queued message for one attempt (leased); commits."""
    due = (
        select(OutboxMessageModel.id)
        .where(
            OutboxMessageModel.state == OutboxState.QUEUED,
            OutboxMessageModel.next_attempt_at <= func.now(),
        )
        .order_by(OutboxMessageModel.next_attempt_at, OutboxMessageModel.id)
        .limit(1)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    row = session.execute(
        update(OutboxMessageModel)
        .where(OutboxMessageModel.id == due)
        .values(
            attempts=OutboxMessageModel.attempts + 1,
            next_attempt_at=func.now() + timedelta(seconds=lease_seconds),
        )
        .returning(
            OutboxMessageModel.id,
            OutboxMessageModel.recipient,
            OutboxMessageModel.subject,
            OutboxMessageModel.body,
            OutboxMessageModel.attempts,
        )
    ).one_or_none()
    session.commit()
    return None if row is None else QueuedMessage(*row)


def record_attempt(
    session: Session,
    message: QueuedMessage,
    *,
    error: str | None,
    max_attempts: int,
    retry_seconds: float,
) -> str:
    """The one writer of a queued message's state: one attempt's outcome; commits.

    Sent (``error`` None) or out of attempts: final, body blanked. Otherwise it is tried
    again after ``retry_seconds``, doubled per attempt made. Returns the new state.
    """
    values: dict[str, object]
    if error is None:
        values = {"state": OutboxState.SENT, "sent_at": func.now(), "body": _BLANKED}
    elif message.attempts >= max_attempts:
        values = {"state": OutboxState.FAILED, "body": _BLANKED}
    else:
        backoff = retry_seconds * 2 ** (message.attempts - 1)
        values = {"next_attempt_at": func.now() + timedelta(seconds=backoff)}
    if error is not None:
        values["last_error"] = error[:_ERROR_LENGTH]
    session.execute(
        update(OutboxMessageModel)
        .where(
            OutboxMessageModel.id == message.id,
            OutboxMessageModel.state == OutboxState.QUEUED,
        )
        .values(**values)
    )
    session.commit()
    return str(values.get("state", OutboxState.QUEUED))


def list_outbox_messages(
    session: Session, *, recipient: str | None, limit: int
) -> OutboxPageResponse:
    """Outbox messages, newest first, all or one recipient's."""
    query = select(OutboxMessageModel).order_by(OutboxMessageModel.id.desc()).limit(limit)
    if recipient is not None:
        query = query.where(OutboxMessageModel.recipient == recipient)
    return OutboxPageResponse(
        messages=[
            OutboxMessageResponse(
                id=message.id,
                recipient=message.recipient,
                subject=message.subject,
                body=message.body,
                state=message.state,
                attempts=message.attempts,
                sent_at=message.sent_at,
                last_error=message.last_error,
                created_at=message.created_at,
            )
            for message in session.scalars(query)
        ]
    )
