"""The outbox: verification emails written to the database when no SMTP server is set."""

from __future__ import annotations

from email.message import EmailMessage

from sqlalchemy import select
from sqlalchemy.orm import Session

from faucet_service.models import OutboxMessageModel
from gridweave_clients.faucet.models import OutboxMessageResponse, OutboxPageResponse

__all__ = ["list_outbox_messages", "write_to_outbox"]


def write_to_outbox(session: Session, message: EmailMessage) -> None:
    """Keep ``message`` in the outbox (flushes; the caller commits)."""
    session.add(
        OutboxMessageModel(
            recipient=str(message["To"]),
            subject=str(message["Subject"]),
            body=str(message.get_content()),
        )
    )
    session.flush()


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
                created_at=message.created_at,
            )
            for message in session.scalars(query)
        ]
    )
