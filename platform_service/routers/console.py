"""``/v1/admin/console/charts``: the admin console's time series, read from Prometheus."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from gridweave_clients.platform.console import (
    MAX_CONSOLE_MINUTES,
    MIN_CONSOLE_MINUTES,
    ConsoleChartsResponse,
)
from platform_service.routers.common import AdminDep, SettingsDep
from platform_service.services.console import read_console_charts

__all__ = ["router"]

router = APIRouter(tags=["console"])


@router.get("/v1/admin/console/charts")
async def read_charts(
    admin: AdminDep,
    settings: SettingsDep,
    minutes: Annotated[
        int,
        Query(
            ge=MIN_CONSOLE_MINUTES,
            le=MAX_CONSOLE_MINUTES,
            description="The window, ending now, in minutes.",
        ),
    ] = 60,
) -> ConsoleChartsResponse:
    """Request rate, server errors and p50/p99 latency per service; the gateway's queue,
    placements and failed placements; VRAM and utilization per node and GPU: each a named
    query of the Prometheus at PLATFORM_PROMETHEUS_URL over the last ``minutes`` (admins).
    503 ``metrics_unavailable`` naming the setting when none is set or it does not answer."""
    return await read_console_charts(
        settings.prometheus_url, minutes=minutes, timeout=settings.downstream_timeout_seconds
    )
