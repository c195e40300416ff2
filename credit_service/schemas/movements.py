"""Mint, deduct and transfer bodies."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from credit_service.schemas.accounts import AccountResponse
from credit_service.schemas.common import Amount, IdempotencyKey, RequestBody, UserId

__all__ = [
    "DeductRequest",
    "MintRequest",
    "MovementResponse",
    "TransferRequest",
    "TransferResponse",
]


class MintRequest(RequestBody):
    """Create money on a user's account (roles admin and faucet only)."""

    amount: Amount
    idempotency_key: IdempotencyKey


class DeductRequest(RequestBody):
    """Take money out of a user's available balance."""

    amount: Amount
    idempotency_key: IdempotencyKey


class MovementResponse(BaseModel):
    """The result of a mint or deduct: the account right after it."""

    kind: Literal["mint", "deduct"]
    idempotency_key: str
    amount: int
    account: AccountResponse


class TransferRequest(RequestBody):
    """Move money between two users, both legs or neither."""

    from_user_id: UserId
    to_user_id: UserId
    amount: Amount
    idempotency_key: IdempotencyKey


class TransferResponse(BaseModel):
    """The result of a transfer: both accounts right after it."""

    idempotency_key: str
    amount: int
    from_account: AccountResponse
    to_account: AccountResponse
