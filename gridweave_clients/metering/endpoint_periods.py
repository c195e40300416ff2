"""An endpoint's billing periods: the reference a period's hold and usage record share, and
what one period's hold takes. Pure (no I/O).

One rule for every party: the platform's deploy check asks for the first holds' amount,
metering prices each period hold the gateway asks for by it, and the gateway's endpoint
billing names each period by its key.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gridweave_clients.metering.pricing import (
    PriceTable,
    VramBeyondPriceTable,
    price_per_gpu_second,
)

__all__ = [
    "ENDPOINT_FIRST_HOLDS",
    "PERIOD_KEY_PREFIX",
    "endpoint_hold_amount",
    "held_price",
    "parse_period_key",
    "period_key",
    "run_micros",
    "started_from_micros",
]

#: Every endpoint hold's reference starts with this (``credit_service`` lists them by it).
PERIOD_KEY_PREFIX = "ep:"
#: The billing periods an endpoint holds at once: the one running and the next (renewed one
#: period ahead). A deployment must be able to place this many holds to be accepted.
ENDPOINT_FIRST_HOLDS = 2
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def run_micros(moment: datetime) -> int:
    """A run's start as its period keys name it: microseconds since the epoch."""
    return round(moment.timestamp() * 1_000_000)


def period_key(endpoint_id: str, started_at: datetime, index: int) -> str:
    """The reference of the hold (and the usage record) of one billing period of a run."""
    return f"{PERIOD_KEY_PREFIX}{endpoint_id}:{run_micros(started_at)}:{index}"


def parse_period_key(reference: str) -> tuple[str, int, int] | None:
    """``(endpoint id, run start in microseconds, period)``; None: not a period key."""
    if not reference.startswith(PERIOD_KEY_PREFIX):
        return None
    parts = reference[len(PERIOD_KEY_PREFIX) :].rsplit(":", 2)
    if len(parts) != 3:
        return None
    endpoint_id, start, index = parts
    if not endpoint_id or not start.isdigit() or not index.isdigit():
        return None
    return endpoint_id, int(start), int(index)


def started_from_micros(micros: int) -> datetime:
    """A run's start from the microseconds of its period keys."""
    return _EPOCH + timedelta(microseconds=micros)


def held_price(table: PriceTable, *, vendor: str, vram_mb: int) -> int:
    """The highest price per GPU-second the work may run at: ``vendor``'s, or for ``any`` the
    dearest vendor that prices ``vram_mb`` (UnknownVendor, VramBeyondPriceTable: none does)."""
    if vendor != "any":
        return price_per_gpu_second(table, vendor=vendor, vram_mb=vram_mb)
    prices: list[int] = []
    refusal: VramBeyondPriceTable | None = None
    for name in sorted(table.root):
        try:
            prices.append(price_per_gpu_second(table, vendor=name, vram_mb=vram_mb))
        except VramBeyondPriceTable as exc:
            refusal = exc
    if not prices:
        raise refusal or VramBeyondPriceTable(f"the price table prices no vendor at {vram_mb} MiB")
    return max(prices)


def endpoint_hold_amount(
    table: PriceTable,
    *,
    vendor: str,
    vram_mb: int,
    gpu_count: int,
    max_replicas: int,
    period_seconds: int,
    periods: int = 1,
) -> int:
    """Micro-credits of ``periods`` billing-period holds of an endpoint: each covers
    ``period_seconds`` x ``max_replicas`` (at least 1) x ``gpu_count`` at :func:`held_price`
    (a free price still holds 1: a settlement needs a hold to close)."""
    price = held_price(table, vendor=vendor, vram_mb=vram_mb)
    period = max(1, price * period_seconds * gpu_count)
    return period * max(1, max_replicas) * periods
