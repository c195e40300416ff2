"""Every credit hold, placed and given back by metering: the one owner of the money held.

The platform asks metering to authorize a job's submission or a map's workers
(``authorize``) and to give back a hold nothing will settle (``release``); the gateway's
endpoint billing asks for each billing period of a run it follows, which metering prices
itself (``authorize_period``), and gives back the periods placed ahead and never run.
Metering settles every other hold from the usage the gateway reports
(``services.usage``). credit_service takes hold, capture, release and settlement from
metering's credential alone, so no other service can move held money.

A hold's reference is its idempotency key at credit_service (metering places holds under
no other key, in its own namespace), so the same reference answers its first hold again and
another amount for it is a 409. A release settles the reference for 0: once, and a
reference already settled keeps its settlement. credit_service's refusal is passed on with
its own status, code and figures (402: balance, held, available, needed, or the spending
cap it would pass).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.credit import operations as credit_ops
from gridweave_clients.credit.models import HoldResponse, OpenHoldsPageResponse, PlacedHold
from gridweave_clients.errors import ServiceRefused, ServiceUnavailable
from gridweave_clients.metering.endpoint_periods import (
    PERIOD_KEY_PREFIX,
    endpoint_hold_amount,
    period_key,
)
from gridweave_clients.metering.models import EndpointPeriodHoldRequest
from gridweave_clients.metering.pricing import PriceTable, Unpriced
from gridweave_runtime.errors import InvalidRequest
from metering_service.errors import CreditMisconfigured, CreditRefused, CreditUnavailable

__all__ = ["authorize", "authorize_period", "list_endpoint_holds", "release"]

#: credit_service's refusals of metering's own credential: never the caller's to act on.
_MISCONFIGURED = frozenset({401, 403})


async def authorize(
    credit: AsyncCreditClient, *, user_id: str, reference: str, amount: int
) -> PlacedHold:
    """Hold ``amount`` of ``user_id``'s credits for ``reference`` (a replay answers the first)."""
    operation = credit_ops.place_hold(
        user_id, amount=amount, idempotency_key=reference, reference=reference
    )
    with _credit_errors():
        return await credit.run(operation)


async def authorize_period(
    credit: AsyncCreditClient, prices: PriceTable, request: EndpointPeriodHoldRequest
) -> PlacedHold:
    """Hold one billing period of an endpoint's run, priced here (``endpoint_periods``'s
    rule, metering's table), under its period key; a field the table cannot price is a 422
    naming it."""
    try:
        amount = endpoint_hold_amount(
            prices,
            vendor=request.vendor,
            vram_mb=request.vram_mb,
            gpu_count=request.gpu_count,
            max_replicas=request.max_replicas,
            period_seconds=request.period_seconds,
        )
    except Unpriced as exc:
        raise InvalidRequest(exc.field, str(exc)) from exc
    reference = period_key(request.endpoint_id, request.run_started_at, request.period)
    return await authorize(credit, user_id=request.owner_id, reference=reference, amount=amount)


async def list_endpoint_holds(
    credit: AsyncCreditClient, *, limit: int, after_id: int | None
) -> OpenHoldsPageResponse:
    """The open endpoint holds of every owner, oldest first (one page)."""
    operation = credit_ops.list_open_holds(PERIOD_KEY_PREFIX, limit=limit, after_id=after_id)
    with _credit_errors():
        return await credit.run(operation)


async def release(credit: AsyncCreditClient, *, user_id: str, reference: str) -> HoldResponse:
    """Give back the whole hold of ``reference``: its settlement for 0, once."""
    with _credit_errors():
        return await credit.run(credit_ops.settle(reference=reference, user_id=user_id, amount=0))


@contextmanager
def _credit_errors() -> Iterator[None]:
    try:
        yield
    except ServiceUnavailable as exc:
        raise CreditUnavailable() from exc
    except ServiceRefused as exc:
        if exc.status_code in _MISCONFIGURED:
            raise CreditMisconfigured() from exc
        raise CreditRefused(exc) from exc
