"""Credit holds: a job's (price x timeout x GPUs, placed before the job reaches the gateway),
and the price table's refusals as the field they name (``priced``; an endpoint's period
holds are sized by ``gridweave_clients.metering.endpoint_periods``, metering's rule).

The price table is metering's, read from metering (``price_table``: ``GET /v1/prices``,
read again once a minute old), so the hold always covers what metering bills for a job
that runs to its timeout. For ``vendor: any`` the dearest vendor's price is held: the job
may land on it.
The hold's reference is the job id, which settles it exactly once (metering's settlement).

Metering owns every hold: the platform asks it to authorize one and to give one back, and
only reads holds at credit_service (whose hold routes take metering's credential alone).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.credit import operations as credit_ops
from gridweave_clients.credit.models import PlacedHold
from gridweave_clients.errors import Conflict, NotFound, PaymentRequired
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering import operations as metering_ops
from gridweave_clients.metering.endpoint_periods import held_price
from gridweave_clients.metering.price_source import PriceSource
from gridweave_clients.metering.pricing import PriceTable, Unpriced
from gridweave_runtime.errors import InvalidRequest
from platform_service.errors import InsufficientCredits, PlatformError
from platform_service.services.downstream import as_user, downstream_errors
from platform_service.services.spending_limits import spending_limit_reached

__all__ = [
    "HoldKeyReused",
    "hold_amount",
    "hold_is_open",
    "place_job_hold",
    "price_table",
    "priced",
    "release_unstarted_job_hold",
]

_log = logging.getLogger(__name__)


def hold_amount(
    table: PriceTable, *, vendor: str, vram_mb: int, gpu_count: int, timeout_seconds: int
) -> int:
    """Micro-credits to hold: the highest price the job may run at x timeout x GPUs (>= 1)."""
    with priced():
        price = held_price(table, vendor=vendor, vram_mb=vram_mb)
    # a free price still holds 1: the settlement needs a hold to close
    return max(1, price * timeout_seconds * gpu_count)


async def price_table(prices: PriceSource) -> PriceTable:
    """Metering's price table; 503 when metering has not answered since the platform
    started (once it has, its last table stands while it does not answer)."""
    with downstream_errors("metering_service", passed=()):
        return await prices.table()


@contextmanager
def priced() -> Iterator[None]:
    """The price table's refusals as a 422 naming the field they cannot price."""
    try:
        yield
    except Unpriced as exc:
        raise InvalidRequest(exc.field, str(exc)) from exc


async def place_job_hold(
    metering: AsyncMeteringClient, *, user_id: str, job_id: str, amount: int
) -> PlacedHold:
    """Have metering hold ``amount`` for ``job_id``; 402 naming balance, held, available and
    needed, or (``spending_limit``) the cap it would pass, its limit, the month's spending
    and the hold."""
    operation = metering_ops.authorize_hold(user_id, reference=job_id, amount=amount)
    with downstream_errors("metering_service", passed=()):
        try:
            return await metering.run(as_user(operation, user_id))
        except PaymentRequired as exc:
            if exc.code == "spending_limit":
                raise spending_limit_reached(exc, what="this job") from exc
            raise _insufficient(exc, amount) from exc
        except Conflict as exc:
            if exc.code == "idempotency_conflict":  # the job held another amount before
                raise HoldKeyReused(job_id) from exc
            raise
        except NotFound:  # no account yet: nothing to hold from
            raise InsufficientCredits(
                f"not enough credits: this job holds {amount} micro-credits, 0 are available",
                balance=0,
                held=0,
                available=0,
                needed=amount,
            ) from None


class HoldKeyReused(Exception):
    """The job's hold was placed before for another amount (a retry that changed fields)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(job_id)
        self.job_id = job_id


def _insufficient(exc: PaymentRequired, amount: int) -> InsufficientCredits:
    figures = {key: exc.details.get(key) for key in ("balance", "held", "available")}
    return InsufficientCredits(
        f"not enough credits: this job holds {amount} micro-credits, "
        f"{figures['available']} are available",
        **figures,
        needed=amount,
    )


async def hold_is_open(credit: AsyncCreditClient, *, user_id: str, hold_id: int) -> bool:
    """Whether the hold is open now (a replayed placement answers how it was then)."""
    with downstream_errors("credit_service", passed=()):
        hold = await credit.run(as_user(credit_ops.get_hold(hold_id), user_id))
    return hold.status == "open"


async def release_unstarted_job_hold(
    metering: AsyncMeteringClient, *, user_id: str, job_id: str
) -> bool:
    """Have metering give back the whole hold of a job that never held a GPU (a submission
    the gateway refused, a job cancelled or failed before it was allocated).

    Such a job is never reported to metering (no node, no GPU, no second to bill), so no
    settlement would ever close its hold. Metering settles its reference with 0, which
    releases all of it exactly once (a repeat replays the first answer). A failure is
    logged, not raised: the job is refused or cancelled whatever happens to its hold, and
    cancelling it again (or the job hold sweeper's next pass) retries. Whether it was
    released.
    """
    operation = metering_ops.release_hold(user_id, reference=job_id)
    try:
        with downstream_errors("metering_service", passed=()):
            await metering.run(as_user(operation, user_id))
    except PlatformError:
        _log.warning(
            "job %s: the hold of the unstarted job was not released", job_id, exc_info=True
        )
        return False
    return True
