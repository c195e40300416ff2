"""credit_service's wire models: the bodies it validates and answers, shared with its clients.

Money is integer micro-credits (1 credit = 1,000,000), never floats.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from gridweave_clients.fields import RequestBody, UserId

__all__ = [
    "MAX_AMOUNT",
    "MAX_BALANCE",
    "AccountOutOfBalance",
    "AccountResponse",
    "Amount",
    "BooksResponse",
    "CaptureAmount",
    "CaptureHoldRequest",
    "DeductRequest",
    "HoldResponse",
    "IdempotencyKey",
    "LedgerEntryResponse",
    "LedgerPageResponse",
    "MintRequest",
    "MovementResponse",
    "OpenHoldResponse",
    "OpenHoldsPageResponse",
    "PlaceHoldRequest",
    "PlacedHold",
    "Reference",
    "ReleaseHoldRequest",
    "SettleRequest",
    "SpendingCap",
    "SpendingLimitsRequest",
    "SpendingLimitsResponse",
    "TransferRequest",
    "TransferResponse",
    "UserId",
]

#: The largest amount one call moves: 10^15 micro-credits = 10^9 credits.
MAX_AMOUNT = 10**15
#: The largest balance an account may hold: 10^18 micro-credits = 10^12 credits, below
#: BIGINT's 9.2 x 10^18 by more than any amount, so no posting can overflow. A mint or
#: transfer that would pass it is refused (409 ``balance_limit_exceeded``), nothing moved.
MAX_BALANCE = 10**18

Amount = Annotated[
    int, Field(strict=True, gt=0, le=MAX_AMOUNT, description="Micro-credits (an integer).")
]
CaptureAmount = Annotated[
    int, Field(strict=True, ge=0, le=MAX_AMOUNT, description="Micro-credits; 0 releases all.")
]
IdempotencyKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^[\x21-\x7e]+$",
        description="Makes a retry safe: the same key replays the first answer.",
    ),
]
Reference = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^[\x21-\x7e]+$",
        description="What the hold pays for, e.g. a job id; settles it exactly once.",
    ),
]

# -- accounts ---------------------------------------------------------------------------------


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


# -- mint, deduct, transfer -------------------------------------------------------------------


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


# -- holds and settlements --------------------------------------------------------------------


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
    """Capture the hold placed with ``reference`` (a job id): exactly once per reference.

    ``user_id`` is who must pay: a hold on another user's account is refused (409
    ``hold_owner_mismatch``), so a settlement never bills an account it does not name.
    """

    reference: Reference
    user_id: UserId
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


class OpenHoldResponse(BaseModel):
    """An open hold, as listed by its reference's prefix."""

    hold_id: int
    user_id: str
    amount: int
    reference: str


class OpenHoldsPageResponse(BaseModel):
    """Open holds whose reference starts with a prefix, oldest first; pass
    ``next_after_id`` as ``after_id`` for the next page (None: no more)."""

    holds: list[OpenHoldResponse]
    next_after_id: int | None


class AccountOutOfBalance(BaseModel):
    """An account whose figures disagree with its ledger or its open holds, all of them."""

    user_id: str
    balance: int
    ledger_total: int = Field(description="The sum of the account's ledger entries.")
    last_balance_after: int | None = Field(
        description="The balance its last ledger entry recorded (None: no entry yet)."
    )
    held: int
    open_held: int = Field(description="The sum of the account's open holds.")


class BooksResponse(BaseModel):
    """The books checked in one snapshot: every account's balance against its ledger (the
    sum of its entries and the last entry's ``balance_after``), its ``held`` against its open
    holds; ``out_of_balance`` lists the accounts that disagree (none, while the books hold)."""

    accounts: int
    open_holds: int
    open_held: int
    out_of_balance: list[AccountOutOfBalance]


class PlacedHold(HoldResponse):
    """A placement's answer as the client reads it: the hold, and ``replayed`` from the
    ``Idempotent-Replayed`` header (the answer repeats an earlier call's with the same key;
    the hold may have moved since). Not a wire model: services answer ``HoldResponse``."""

    replayed: bool = False


# -- spending limits --------------------------------------------------------------------------

SpendingCap = Annotated[
    int,
    Field(strict=True, ge=0, le=MAX_BALANCE, description="Micro-credits (an integer, >= 0)."),
]


class SpendingLimitsRequest(RequestBody):
    """A side's two caps (the user's or an admin's), replaced whole: null clears one."""

    monthly_cap: SpendingCap | None = Field(
        default=None, description="What may be spent in a calendar month (UTC); null: no cap."
    )
    per_job_cap: SpendingCap | None = Field(
        default=None, description="What one job's hold may be; null: no cap."
    )


class SpendingLimitsResponse(BaseModel):
    """An account's caps and this month's spending, all in micro-credits.

    ``monthly_cap`` and ``per_job_cap`` are in force: the lower of the user's and the admin's
    (null: neither set one). ``spent`` is what was charged since ``month_start`` (the first
    of the month, UTC: deductions, captures, settlements) plus what is held now; a hold that
    would take it past ``monthly_cap``, or that alone passes ``per_job_cap``, is refused
    with 402 ``spending_limit``.
    """

    user_id: str
    monthly_cap: int | None
    per_job_cap: int | None
    user_monthly_cap: int | None
    user_per_job_cap: int | None
    admin_monthly_cap: int | None
    admin_per_job_cap: int | None
    month_start: datetime
    spent: int
