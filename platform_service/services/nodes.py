"""The cluster's GPUs as the gateway's scheduler sees them (VRAM held and free per GPU)."""

from __future__ import annotations

from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.gateway import operations as gw_ops
from gridweave_clients.gateway.models import InventoryResponse
from platform_service.services.downstream import as_user, downstream_errors

__all__ = ["list_nodes"]


async def list_nodes(gateway: AsyncGatewayClient, *, user_id: str) -> InventoryResponse:
    """Every node and GPU with its VRAM, held and free (no job or owner is named)."""
    with downstream_errors("job_gateway", passed=()):
        return await gateway.run(as_user(gw_ops.get_inventory(), user_id))
