"""The inventory as the scheduler sees it: every GPU with the VRAM its allocations hold,
what holds it, and the VRAM measured in use where something measures it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from gridweave_clients.gateway.models import (
    InventoryAllocationResponse,
    InventoryGpuResponse,
    InventoryNodeResponse,
    InventoryResponse,
)
from gridweave_controller.models import Endpoint, Job
from job_gateway.inventory import Inventory
from job_gateway.scheduler import AllocationMap

__all__ = ["Lookup", "inventory_response"]

#: The cached object of a name (an informer's ``get``), or None.
Lookup = Callable[[str], Job | Endpoint | None]


def _no_object(_name: str) -> None:
    return None


def _holders(
    allocations: AllocationMap, jobs: Lookup, endpoints: Lookup
) -> dict[tuple[str, int], list[InventoryAllocationResponse]]:
    """What holds VRAM on each (node, GPU index), largest first, then by kind and name."""
    holders: dict[tuple[str, int], list[InventoryAllocationResponse]] = defaultdict(list)
    for allocation in allocations:
        lookup = jobs if allocation.kind == "job" else endpoints
        holder = lookup(allocation.name)  # None: placed, its object not seen yet
        entry = InventoryAllocationResponse(
            kind=allocation.kind,
            name=allocation.name,
            user_id=None if holder is None else holder.spec.user_id,
            owner=None if holder is None else holder.billing_owner,
            vram_mb=allocation.vram_mb,
        )
        for index in allocation.gpu_indices:
            holders[(allocation.node, index)].append(entry)
    for entries in holders.values():
        entries.sort(key=lambda entry: (-entry.vram_mb, entry.kind, entry.name))
    return holders


def _free(capacity: int | None, held: int) -> int | None:
    return None if capacity is None else max(capacity - held, 0)


def inventory_response(
    inventory: Inventory,
    allocations: AllocationMap,
    *,
    jobs: Lookup = _no_object,
    endpoints: Lookup = _no_object,
) -> InventoryResponse:
    """Nodes and GPUs in inventory order; held VRAM and its holders, and each node's held
    CPU and memory, from the allocation map (the CRDs), their users from ``jobs`` and
    ``endpoints``; ``used_mb`` as measured."""
    holders = _holders(allocations, jobs, endpoints)
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
                    used_mb=gpu.used_mb,
                    schedulable=gpu.schedulable,
                    simulated=gpu.simulated,
                    allocations=holders.get((node.name, gpu.index), []),
                )
            )
        cpu_held, memory_held = allocations.node_held(node.name)
        nodes.append(
            InventoryNodeResponse(
                name=node.name,
                ready=node.ready,
                gpus=gpus,
                cpu_millis=node.cpu_millis,
                cpu_held_millis=cpu_held,
                cpu_free_millis=_free(node.cpu_millis, cpu_held),
                memory_mb=node.memory_mb,
                memory_held_mb=memory_held,
                memory_free_mb=_free(node.memory_mb, memory_held),
            )
        )
    return InventoryResponse(nodes=nodes)
