"""The job_gateway client (blocking and asyncio) and its wire models."""

from __future__ import annotations

from gridweave_clients.gateway.client import AsyncGatewayClient, GatewayClient

__all__ = ["AsyncGatewayClient", "GatewayClient"]
