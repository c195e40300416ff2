"""Every credit hold, placed and given back by metering: the one owner of the money held.

The platform asks metering to authorize a job's submission, a map's workers or an
endpoint's billing period (``authorize``) and to give back a hold nothing will settle
(``release``); metering settles every other one from the usage the gateway reports
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
from gridweave_clients.credit.models import HoldResponse, PlacedHold
from gridweave_clients.errors import ServiceRefused, ServiceUnavailable
from metering_service.errors import CreditMisconfigured, CreditRefused, CreditUnavailable

__all__ = ["authorize", "release"]

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
