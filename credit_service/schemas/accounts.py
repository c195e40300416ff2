"""Account bodies."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

__all__ = ["AccountResponse", "LedgerEntryResponse", "LedgerPageResponse"]


class AccountResponse(BaseModel):
    """An account: ``available`` = ``balance`` - ``held``; all in micro-credits."""

    user_id: str
    balance: int
    held: int
    available: int


class LedgerEntryResponse(BaseModel):
    """One ledger entry (negative ``amount`` took money out)."""

    id: int
    amount: int
    balance_after: int
    kind: str
    operation_key: str
    hold_id: int | None
    counterparty_user_id: str | None
    created_at: datetime


class LedgerPageResponse(BaseModel):
    """Entries newest first; pass ``next_before_id`` as ``before_id`` for the next page."""

    user_id: str
    entries: list[LedgerEntryResponse]
    next_before_id: int | None
