"""``/v1/inventory``: the nodes and GPUs the scheduler places on, the VRAM held on each and
by what, and the VRAM measured in use."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from gridweave_clients.gateway.models import InventoryResponse
from gridweave_runtime.auth import callable_by
from gridweave_runtime.clients import state_dependency
from job_gateway.gateway import Gateway
from job_gateway.services.inventory import inventory_response

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/inventory", tags=["inventory"], dependencies=callable_by("platform", "admin")
)
CurrentGateway = Annotated[Gateway, Depends(state_dependency("gateway", Gateway))]


@router.get("")
async def get_inventory(gateway: CurrentGateway) -> InventoryResponse:
    """Every node and GPU: the VRAM allocated jobs and endpoints hold (from the CRDs), which
    ones hold it, and the VRAM measured in use where measured."""
    return inventory_response(
        gateway.scheduler.inventory,
        gateway.allocations,
        jobs=gateway.jobs.get,
        endpoints=gateway.endpoints.get,
    )
