"""``/v1/prices``: the price table metering bills by, for the services that show and hold by it."""

from __future__ import annotations

from fastapi import APIRouter

from gridweave_clients.metering.pricing import PriceTable
from gridweave_runtime.auth import callable_by
from metering_service.routers.common import SettingsDep

__all__ = ["router"]

router = APIRouter(tags=["prices"])


@router.get("/v1/prices", dependencies=callable_by("platform", "gateway"))
async def get_prices(settings: SettingsDep) -> PriceTable:
    """Micro-credits per GPU-second by vendor and VRAM tier (``METERING_PRICE_TABLE``): the
    platform sizes job holds and shows endpoint prices by it, the gateway prices an ``any``
    endpoint's periods at its dearest vendor."""
    return settings.price_table
