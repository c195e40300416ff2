"""The inventory as the scheduler sees it: every GPU with the VRAM its allocations hold."""

from __future__ import annotations

from gridweave_clients.gateway.models import (
    InventoryGpuResponse,
    InventoryNodeResponse,
    InventoryResponse,
)
from job_gateway.inventory import Inventory
from job_gateway.scheduler import AllocationMap

__all__ = ["inventory_response"]


def inventory_response(inventory: Inventory, allocations: AllocationMap) -> InventoryResponse:
    """Nodes and GPUs in inventory order; held VRAM from the allocation map (the CRDs)."""
    nodes = []
    for node in inventory.nodes:
        gpus = []
        for gpu in node.gpus:
            held = allocations.held_mb(node.name, gpu.index)
            gpus.append(
                InventoryGpuResponse(
                    index=gpu.index,
                    vendor=gpu.vendor,
                    model=gpu.model,
                    vram_mb=gpu.vram_mb,
                    held_mb=held,
                    free_mb=max(gpu.vram_mb - held, 0),
                    schedulable=gpu.schedulable,
                    simulated=gpu.simulated,
                )
            )
        nodes.append(InventoryNodeResponse(name=node.name, ready=node.ready, gpus=gpus))
    return InventoryResponse(nodes=nodes)
