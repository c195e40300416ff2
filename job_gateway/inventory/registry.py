"""kuberay-service's node registry (``GET /v1/nodes``) as an inventory.

A node is ready when the registry says ``Ready`` (heartbeats arrive). A GPU takes work when
neither it nor its node is cordoned and its last heartbeat found it healthy. The registry's
``free_vram_mb`` never decides a placement: what is free is what the GridweaveJob and
GridweaveEndpoint objects leave, which the scheduler's allocation map counts. It is shown:
``used_mb`` is ``vram_mb - free_vram_mb`` of a healthy GPU's last heartbeat (everything
not free: work, the driver's reservation), None where no heartbeat measured it.
"""

from __future__ import annotations

from gridweave_clients.errors import ServiceError
from gridweave_clients.nodes import NodeGpuResponse, NodeListResponse, NodeRegistryClient
from job_gateway.inventory.errors import InventoryUnavailable
from job_gateway.inventory.models import Gpu, Inventory, Node

__all__ = ["NodeRegistrySource", "inventory_from_nodes"]


def _measured_use(gpu: NodeGpuResponse) -> int | None:
    """VRAM in use by the GPU's last heartbeat; None when none measured it (an unhealthy GPU
    reports 0 free, which measures nothing)."""
    if gpu.free_vram_mb is None or not gpu.healthy:
        return None
    return max(gpu.vram_mb - gpu.free_vram_mb, 0)


def inventory_from_nodes(answer: NodeListResponse) -> Inventory:
    """The inventory a ``GET /v1/nodes`` answer describes (nodes by name, GPUs by index)."""
    return Inventory(
        nodes=tuple(
            Node(
                name=node.name,
                ready=node.status == "Ready",
                labels=node.labels,
                cpu_millis=node.cpu_millis,
                memory_mb=node.memory_mb,
                gpus=tuple(
                    Gpu(
                        node=node.name,
                        index=gpu.index,
                        vendor=gpu.vendor,
                        model=gpu.model,
                        vram_mb=gpu.vram_mb,
                        schedulable=not (node.cordoned or gpu.cordoned) and gpu.healthy,
                        used_mb=_measured_use(gpu),
                    )
                    for gpu in sorted(node.gpus, key=lambda gpu: gpu.index)
                ),
            )
            for node in sorted(answer.nodes, key=lambda node: node.name)
        )
    )


class NodeRegistrySource:
    """The joined nodes, read from kuberay-service through the internal client base."""

    def __init__(self, client: NodeRegistryClient) -> None:
        self._client = client

    def read_inventory(self) -> Inventory:
        """The registry's nodes now; :class:`InventoryUnavailable` when it cannot be read."""
        try:
            answer = self._client.list_nodes()
        except ServiceError as exc:
            raise InventoryUnavailable(f"the node registry could not be read: {exc}") from exc
        return inventory_from_nodes(answer)
