"""Hold and settlement bodies."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from credit_service.schemas.accounts import AccountResponse
from credit_service.schemas.common import (
    MAX_AMOUNT,
    Amount,
    IdempotencyKey,
    Reference,
    RequestBody,
    UserId,
)

__all__ = [
    "CaptureHoldRequest",
    "HoldResponse",
    "PlaceHoldRequest",
    "ReleaseHoldRequest",
    "SettleRequest",
]

CaptureAmount = Annotated[
    int, Field(strict=True, ge=0, le=MAX_AMOUNT, description="Micro-credits; 0 releases all.")
]


class PlaceHoldRequest(RequestBody):
    """Set money aside on a user's account; refused with 402 if unavailable."""

    user_id: UserId
    amount: Amount
    idempotency_key: IdempotencyKey
    reference: Reference | None = None


class CaptureHoldRequest(RequestBody):
    """Take ``amount`` (at most the hold) from the held money; the rest is released."""

    amount: CaptureAmount
    idempotency_key: IdempotencyKey


class ReleaseHoldRequest(RequestBody):
    """Give the whole hold back to the available balance."""

    idempotency_key: IdempotencyKey


class SettleRequest(RequestBody):
    """Capture the hold placed with ``reference`` (a job id): exactly once per reference."""

    reference: Reference
    amount: CaptureAmount


class HoldResponse(BaseModel):
    """A hold and its account right after the operation that answered it."""

    hold_id: int
    user_id: str
    amount: int
    captured: int
    released: int
    status: str
    reference: str | None
    account: AccountResponse
