"""Outbox bodies."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

__all__ = ["OutboxMessageResponse", "OutboxPageResponse"]


class OutboxMessageResponse(BaseModel):
    """An email written to the outbox instead of sent."""

    id: int
    recipient: str
    subject: str
    body: str
    created_at: datetime


class OutboxPageResponse(BaseModel):
    """Outbox messages, newest first."""

    messages: list[OutboxMessageResponse]
