"""What an endpoint costs and has been billed, as its owner reads it.

- ``price_per_second``: what a running second of one replica is billed at: its vendor's
  price, for vendor ``any`` the price of the vendor it was placed on (usage records are
  priced so; a run whose placement is unknown is billed at the dearest). An ``any``
  endpoint that does not run has none: ``max_price_per_second``, the dearest vendor's (what
  its holds are sized by), is the most it may cost. So the figure never turns from one
  number into another when the endpoint starts running.
- ``billed_seconds``: the seconds of its usage records (metering's totals for the endpoint
  since it was created), so it reads what ``gridweave usage`` lists, period by period while
  it runs; the gateway's own count (finished runs only) when metering does not answer.
"""

from __future__ import annotations

import logging

from gridweave_clients.errors import ServiceRefused, ServiceUnavailable
from gridweave_clients.gateway import endpoints as gw
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering import operations as metering_ops
from gridweave_clients.metering.pricing import PriceTable
from gridweave_controller.phases import EndpointPhase
from gridweave_runtime.errors import InvalidRequest
from platform_service.services.holds import hold_amount

__all__ = ["billed_seconds", "max_price_per_second", "price_per_second"]

_log = logging.getLogger(__name__)


def _price(prices: PriceTable | None, endpoint: gw.EndpointResponse, vendor: str) -> int | None:
    if prices is None:  # metering's table not read yet: unknown
        return None
    try:
        return hold_amount(
            prices,
            vendor=vendor,
            vram_mb=endpoint.vram_mb,
            gpu_count=endpoint.gpu_count,
            timeout_seconds=1,
        )
    except InvalidRequest:  # a vendor or VRAM the table does not price: shown as unknown
        return None


def price_per_second(prices: PriceTable | None, endpoint: gw.EndpointResponse) -> int | None:
    """Micro-credits per running second of one replica; None for an ``any`` endpoint not
    placed and not running (or one the table does not price)."""
    vendor = endpoint.placed_vendor or endpoint.vendor
    if vendor == "any" and endpoint.phase != EndpointPhase.RUNNING:
        return None
    return _price(prices, endpoint, vendor)  # any: the dearest, as billing charges it


def max_price_per_second(prices: PriceTable | None, endpoint: gw.EndpointResponse) -> int | None:
    """The most a running second of one replica may cost: the dearest vendor's price for an
    ``any`` endpoint, else its vendor's."""
    return _price(prices, endpoint, endpoint.vendor)


async def billed_seconds(
    metering: AsyncMeteringClient | None, endpoint: gw.EndpointResponse
) -> int:
    """The seconds the endpoint's usage records bill (this deployment's: since it was
    created); the gateway's count when metering cannot be read."""
    if metering is None:
        return endpoint.billed_seconds
    operation = metering_ops.list_usage(
        endpoint.user_id, endpoint_id=endpoint.id, period_from=endpoint.created_at, limit=1
    )
    try:
        page = await metering.run(operation)
    except (ServiceUnavailable, ServiceRefused) as exc:
        _log.warning("billed seconds of endpoint %s: metering: %s", endpoint.id, exc)
        return endpoint.billed_seconds
    return page.totals.billed_seconds
