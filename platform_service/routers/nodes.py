"""``/v1/nodes``: the GPUs of the cluster, with their used and free VRAM."""

from __future__ import annotations

from fastapi import APIRouter

from gridweave_clients.gateway.models import InventoryResponse
from platform_service.routers.common import JobServicesDep, UserDep
from platform_service.services import nodes

__all__ = ["router"]

router = APIRouter(prefix="/v1/nodes", tags=["nodes"])


@router.get("")
async def list_nodes(user: UserDep, services: JobServicesDep) -> InventoryResponse:
    """Every node and GPU: vendor, model, VRAM, held and free (from the scheduler)."""
    return await nodes.list_nodes(services.gateway, user_id=user.user_id)
