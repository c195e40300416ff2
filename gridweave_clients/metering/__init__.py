"""The metering_service client (blocking and asyncio) and its wire models."""

from __future__ import annotations

from gridweave_clients.metering.client import AsyncMeteringClient, MeteringClient

__all__ = ["AsyncMeteringClient", "MeteringClient"]
