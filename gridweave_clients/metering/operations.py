"""metering_service's routes as typed operations (sans-IO), each declared once.

Recording usage is replayable: metering keeps one record per credit hold, so the same
record sent again returns the first (and finishes its settlement). Metering owns every
credit hold: the platform asks it to authorize one (``authorize_hold``), the platform and
the gateway to give one back (``release_hold``); both are replayable by the hold's
reference.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from pydantic import Field, validate_call

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.credit.models import (
    Amount,
    HoldResponse,
    OpenHoldsPageResponse,
    PlacedHold,
    Reference,
)
from gridweave_clients.credit.operations import read_placed_hold
from gridweave_clients.fields import DatabaseId, PrintableId, UserId, UtcDatetime
from gridweave_clients.metering.models import (
    AuthorizeHoldRequest,
    EndpointPeriodHoldRequest,
    RecordUsageRequest,
    ReleaseHoldRequest,
    UsagePageResponse,
    UsageRecordResponse,
)
from gridweave_clients.metering.pricing import PriceTable

__all__ = [
    "authorize_hold",
    "get_prices",
    "get_usage",
    "hold_endpoint_period",
    "list_endpoint_holds",
    "list_usage",
    "record_usage",
    "release_hold",
    "settle_usage",
]

UsageId = Annotated[DatabaseId, Field(strict=True)]
PageLimit = Annotated[int, Field(strict=True, ge=1, le=1000)]


@validate_call
def record_usage(request: RecordUsageRequest) -> Operation[UsageRecordResponse]:
    """Record a finished job's or endpoint run's usage and settle its hold (replay-safe)."""
    return model_operation("POST", "/v1/usage", UsageRecordResponse, body=request, idempotent=True)


@validate_call
def list_usage(
    user_id: UserId,
    *,
    period_from: UtcDatetime | None = None,
    period_to: UtcDatetime | None = None,
    limit: PageLimit = 100,
    before_id: UsageId | None = None,
    hold_reference: PrintableId | None = None,
    endpoint_id: PrintableId | None = None,
) -> Operation[UsagePageResponse]:
    """``user_id``'s usage that finished in [from, to), newest first, with the totals;
    ``hold_reference``: only the record of that hold; ``endpoint_id``: only that endpoint's
    records."""
    params = {"user_id": user_id, "limit": str(limit)}
    if period_from is not None:
        params["from"] = period_from.isoformat()
    if period_to is not None:
        params["to"] = period_to.isoformat()
    if before_id is not None:
        params["before_id"] = str(before_id)
    if hold_reference is not None:
        params["hold_reference"] = hold_reference
    if endpoint_id is not None:
        params["endpoint_id"] = endpoint_id
    return model_operation("GET", "/v1/usage", UsagePageResponse, params=params)


@validate_call
def get_usage(usage_id: UsageId) -> Operation[UsageRecordResponse]:
    """One usage record and its settlement."""
    return model_operation("GET", f"/v1/usage/{usage_id}", UsageRecordResponse)


@validate_call
def settle_usage(usage_id: UsageId) -> Operation[UsageRecordResponse]:
    """Try again to settle a pending or refused record; a settled one is returned as is."""
    return model_operation(
        "POST", f"/v1/usage/{usage_id}/settle", UsageRecordResponse, idempotent=True
    )


def get_prices() -> Operation[PriceTable]:
    """The price table metering bills by (micro-credits per GPU-second by vendor and VRAM
    tier): the one the platform sizes holds by and shows prices from."""
    return model_operation("GET", "/v1/prices", PriceTable)


@validate_call
def authorize_hold(
    user_id: UserId, *, reference: Reference, amount: Amount
) -> Operation[PlacedHold]:
    """Hold ``amount`` of ``user_id``'s credits for ``reference``; PaymentRequired with the
    figures (or the spending cap it would pass) when it cannot be held. Replayable: the same
    reference answers its first hold (``replayed``); another amount is a Conflict."""
    body = AuthorizeHoldRequest(user_id=user_id, reference=reference, amount=amount)
    operation = model_operation("POST", "/v1/holds", PlacedHold, body=body, idempotent=True)
    return replace(operation, read=read_placed_hold)


@validate_call
def release_hold(user_id: UserId, *, reference: Reference) -> Operation[HoldResponse]:
    """Give back the whole hold of ``reference``, once (NotFound: none was placed; Conflict:
    it was settled for more before)."""
    body = ReleaseHoldRequest(user_id=user_id, reference=reference)
    return model_operation("POST", "/v1/releases", HoldResponse, body=body, idempotent=True)


@validate_call
def hold_endpoint_period(request: EndpointPeriodHoldRequest) -> Operation[PlacedHold]:
    """Hold one billing period of an endpoint's run at metering's price; PaymentRequired
    with the figures (or the spending cap it would pass) when the owner cannot pay.
    Replayable: the period key answers its first hold (``replayed``)."""
    operation = model_operation(
        "POST", "/v1/endpoint-holds", PlacedHold, body=request, idempotent=True
    )
    return replace(operation, read=read_placed_hold)


@validate_call
def list_endpoint_holds(
    *, limit: PageLimit = 1000, after_id: DatabaseId | None = None
) -> Operation[OpenHoldsPageResponse]:
    """The open endpoint holds (every owner's), oldest first (``after_id`` pages on): what
    the endpoint billing finds of the runs it no longer follows."""
    params = {"limit": str(limit)}
    if after_id is not None:
        params["after_id"] = str(after_id)
    return model_operation("GET", "/v1/endpoint-holds", OpenHoldsPageResponse, params=params)
