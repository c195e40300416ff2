"""Refill bodies."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from credit_service.schemas.common import RequestBody, UserId

__all__ = ["RefillRequest", "RefillResponse"]


class RefillRequest(RequestBody):
    """Ask for a refill of ``user_id``'s account."""

    user_id: UserId


class RefillResponse(BaseModel):
    """A refill (micro-credits) and the balance credit_service reported after it."""

    refill_id: int
    user_id: str
    amount: int
    state: str
    created_at: datetime
    minted_at: datetime | None
    balance: int | None
