"""credit_service's routes as typed operations (sans-IO), each declared once.

Every builder checks its arguments with the wire models' own types (a bad one raises
``InvalidRequest`` naming it, before anything is sent) and says whether the call is
replayable: reads, the idempotent PUT, and every write, since each carries an idempotency
key or, for a settlement, the reference it settles exactly once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated
from urllib.parse import quote

from pydantic import Field, validate_call

from gridweave_clients._core import REPLAYED_HEADER, Answer, Operation, model_operation
from gridweave_clients.credit.models import (
    AccountResponse,
    Amount,
    BooksResponse,
    CaptureAmount,
    CaptureHoldRequest,
    DeductRequest,
    HoldResponse,
    IdempotencyKey,
    LedgerPageResponse,
    MintRequest,
    MovementResponse,
    OpenHoldsPageResponse,
    PlacedHold,
    PlaceHoldRequest,
    Reference,
    ReleaseHoldRequest,
    SettleRequest,
    SpendingCap,
    SpendingLimitsRequest,
    SpendingLimitsResponse,
    TransferRequest,
    TransferResponse,
)
from gridweave_clients.fields import DatabaseId, UserId

__all__ = [
    "capture_hold",
    "check_books",
    "deduct",
    "get_account",
    "get_hold",
    "get_spending_limits",
    "list_ledger",
    "list_open_holds",
    "mint",
    "open_account",
    "place_hold",
    "read_placed_hold",
    "release_hold",
    "set_admin_spending_limits",
    "set_spending_limits",
    "settle",
    "transfer",
]

HoldId = Annotated[DatabaseId, Field(strict=True)]
LedgerLimit = Annotated[int, Field(strict=True, ge=1, le=1000)]


def _account(user_id: str, action: str = "") -> str:
    return f"/v1/accounts/{quote(user_id, safe='')}{action}"


# -- accounts ---------------------------------------------------------------------------------


@validate_call
def open_account(user_id: UserId) -> Operation[AccountResponse]:
    """Open the account of ``user_id`` (idempotent: an open account is returned as is)."""
    return model_operation("PUT", _account(user_id), AccountResponse)


@validate_call
def get_account(user_id: UserId) -> Operation[AccountResponse]:
    """Balance, held and available money of ``user_id``; NotFound when it has no account."""
    return model_operation("GET", _account(user_id), AccountResponse)


@validate_call
def list_ledger(
    user_id: UserId, *, limit: LedgerLimit = 100, before_id: HoldId | None = None
) -> Operation[LedgerPageResponse]:
    """The account's ledger entries, newest first (``before_id`` pages on)."""
    params = {"limit": str(limit)}
    if before_id is not None:
        params["before_id"] = str(before_id)
    return model_operation("GET", _account(user_id, "/ledger"), LedgerPageResponse, params=params)


@validate_call
def mint(
    user_id: UserId, *, amount: Amount, idempotency_key: IdempotencyKey
) -> Operation[MovementResponse]:
    """Create ``amount`` micro-credits on ``user_id``'s account (roles admin and faucet)."""
    body = MintRequest(amount=amount, idempotency_key=idempotency_key)
    return model_operation(
        "POST", _account(user_id, "/mint"), MovementResponse, body=body, idempotent=True
    )


@validate_call
def deduct(
    user_id: UserId, *, amount: Amount, idempotency_key: IdempotencyKey
) -> Operation[MovementResponse]:
    """Take ``amount`` from ``user_id``'s available balance; PaymentRequired if not there."""
    body = DeductRequest(amount=amount, idempotency_key=idempotency_key)
    return model_operation(
        "POST", _account(user_id, "/deduct"), MovementResponse, body=body, idempotent=True
    )


@validate_call
def transfer(
    *,
    from_user_id: UserId,
    to_user_id: UserId,
    amount: Amount,
    idempotency_key: IdempotencyKey,
) -> Operation[TransferResponse]:
    """Move ``amount`` from one user to another: both legs or neither."""
    body = TransferRequest(
        from_user_id=from_user_id,
        to_user_id=to_user_id,
        amount=amount,
        idempotency_key=idempotency_key,
    )
    return model_operation("POST", "/v1/transfers", TransferResponse, body=body, idempotent=True)


# -- holds and settlements --------------------------------------------------------------------


@validate_call
def place_hold(
    user_id: UserId,
    *,
    amount: Amount,
    idempotency_key: IdempotencyKey,
    reference: Reference | None = None,
) -> Operation[PlacedHold]:
    """Set ``amount`` aside; PaymentRequired (with the balance and the need) if unavailable."""
    body = PlaceHoldRequest(
        user_id=user_id, amount=amount, idempotency_key=idempotency_key, reference=reference
    )
    operation = model_operation("POST", "/v1/holds", PlacedHold, body=body, idempotent=True)
    return replace(operation, read=read_placed_hold)


def read_placed_hold(answer: Answer) -> PlacedHold:
    """The hold, marked ``replayed`` when credit_service says the answer is a replay."""
    hold = PlacedHold.model_validate_json(answer.content)
    return hold.model_copy(update={"replayed": answer.headers.get(REPLAYED_HEADER) == "true"})


@validate_call
def get_hold(hold_id: HoldId) -> Operation[HoldResponse]:
    """A hold and its account."""
    return model_operation("GET", f"/v1/holds/{hold_id}", HoldResponse)


@validate_call
def list_open_holds(
    reference_prefix: Reference, *, limit: LedgerLimit = 100, after_id: HoldId | None = None
) -> Operation[OpenHoldsPageResponse]:
    """Open holds whose reference starts with ``reference_prefix``, oldest first
    (``after_id`` pages on): what a payer that holds ahead finds of its own after a restart."""
    params = {"reference_prefix": reference_prefix, "limit": str(limit)}
    if after_id is not None:
        params["after_id"] = str(after_id)
    return model_operation("GET", "/v1/holds", OpenHoldsPageResponse, params=params)


def check_books() -> Operation[BooksResponse]:
    """Every account's balance against its ledger and its held money against its open
    holds, in one snapshot; the accounts that disagree are listed (none while they hold)."""
    return model_operation("GET", "/v1/books", BooksResponse)


@validate_call
def capture_hold(
    hold_id: HoldId, *, amount: CaptureAmount, idempotency_key: IdempotencyKey
) -> Operation[HoldResponse]:
    """Charge ``amount`` (at most the hold); the rest goes back to the available balance."""
    body = CaptureHoldRequest(amount=amount, idempotency_key=idempotency_key)
    return model_operation(
        "POST", f"/v1/holds/{hold_id}/capture", HoldResponse, body=body, idempotent=True
    )


@validate_call
def release_hold(hold_id: HoldId, *, idempotency_key: IdempotencyKey) -> Operation[HoldResponse]:
    """Give a whole hold back."""
    body = ReleaseHoldRequest(idempotency_key=idempotency_key)
    return model_operation(
        "POST", f"/v1/holds/{hold_id}/release", HoldResponse, body=body, idempotent=True
    )


@validate_call
def settle(
    *, reference: Reference, user_id: UserId, amount: CaptureAmount
) -> Operation[HoldResponse]:
    """Capture ``amount`` of ``user_id``'s hold placed with ``reference``: once per reference."""
    body = SettleRequest(reference=reference, user_id=user_id, amount=amount)
    return model_operation("POST", "/v1/settlements", HoldResponse, body=body, idempotent=True)


# -- spending limits --------------------------------------------------------------------------


@validate_call
def get_spending_limits(user_id: UserId) -> Operation[SpendingLimitsResponse]:
    """The caps of ``user_id`` in force, each side's, and this month's spending."""
    return model_operation("GET", _account(user_id, "/spending-limits"), SpendingLimitsResponse)


@validate_call
def set_spending_limits(
    user_id: UserId, *, monthly_cap: SpendingCap | None, per_job_cap: SpendingCap | None
) -> Operation[SpendingLimitsResponse]:
    """Replace the user's own caps (None clears one); InvalidRequest above an admin's."""
    body = SpendingLimitsRequest(monthly_cap=monthly_cap, per_job_cap=per_job_cap)
    return model_operation(
        "PUT",
        _account(user_id, "/spending-limits"),
        SpendingLimitsResponse,
        body=body,
        idempotent=True,
    )


@validate_call
def set_admin_spending_limits(
    user_id: UserId, *, monthly_cap: SpendingCap | None, per_job_cap: SpendingCap | None
) -> Operation[SpendingLimitsResponse]:
    """Replace an admin's caps on ``user_id``, which the user cannot raise (role admin)."""
    body = SpendingLimitsRequest(monthly_cap=monthly_cap, per_job_cap=per_job_cap)
    return model_operation(
        "PUT",
        _account(user_id, "/admin-spending-limits"),
        SpendingLimitsResponse,
        body=body,
        idempotent=True,
    )
