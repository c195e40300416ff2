"""The blocking and asyncio clients of metering_service."""

from __future__ import annotations

from gridweave_clients.base import AsyncInternalClient, InternalClient, awaiting, blocking
from gridweave_clients.metering import operations as ops

__all__ = ["AsyncMeteringClient", "MeteringClient"]


class MeteringClient(InternalClient):
    """metering_service (port 8300): credit holds, usage records, billed seconds, settlement."""

    service = "metering_service"

    get_prices = blocking(ops.get_prices)
    authorize_hold = blocking(ops.authorize_hold)
    release_hold = blocking(ops.release_hold)
    record_usage = blocking(ops.record_usage)
    list_usage = blocking(ops.list_usage)
    get_usage = blocking(ops.get_usage)
    settle_usage = blocking(ops.settle_usage)


class AsyncMeteringClient(AsyncInternalClient):
    """metering_service over asyncio: the methods of :class:`MeteringClient`, awaited."""

    service = "metering_service"

    get_prices = awaiting(ops.get_prices)
    authorize_hold = awaiting(ops.authorize_hold)
    release_hold = awaiting(ops.release_hold)
    record_usage = awaiting(ops.record_usage)
    list_usage = awaiting(ops.list_usage)
    get_usage = awaiting(ops.get_usage)
    settle_usage = awaiting(ops.settle_usage)
