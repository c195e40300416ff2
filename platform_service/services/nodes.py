"""The cluster's nodes: their GPUs as the gateway's scheduler sees them (VRAM held, free and
measured in use; the jobs and endpoints holding it: all for admins, a user's own otherwise),
and, for admins, the node registry's view (heartbeats, cordons) kept by kuberay-service.

Cordon: the node takes no new work; what runs there stays. Drain: cordon, then wait for what
runs there to finish (nothing is cancelled); the node is drained once no job or endpoint holds
VRAM on it. The cordon is kept on the node's row in the registry, so restarts forget nothing.
Only joined nodes are in the registry: a node the gateway lists from its own machine or its
inventory file is refused with 409 ``node_not_joined`` saying so, not a 404 for a node the
nodes page shows.
"""

from __future__ import annotations

from gridweave_clients import ServiceError, ServiceRefused
from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.gateway import operations as gw_ops
from gridweave_clients.gateway.models import InventoryAllocationResponse, InventoryResponse
from gridweave_clients.nodes import AsyncNodeRegistryClient, NodeListResponse, NodeResponse
from gridweave_clients.nodes import operations as node_ops
from gridweave_clients.platform.admin import DrainNodeResponse
from platform_service.errors import NodeNotJoined
from platform_service.models import Role
from platform_service.services.downstream import as_user, downstream_errors, platform_error
from platform_service.services.endpoints import endpoint_name
from platform_service.services.join_keys import REGISTRY_REFUSALS
from platform_service.services.keys import AuthenticatedUser

__all__ = ["drain_node", "list_joined_nodes", "list_nodes", "set_node_cordoned"]


async def _read_inventory(gateway: AsyncGatewayClient, *, user_id: str) -> InventoryResponse:
    with downstream_errors("job_gateway", passed=()):
        return await gateway.run(as_user(gw_ops.get_inventory(), user_id))


def _named(allocation: InventoryAllocationResponse) -> InventoryAllocationResponse:
    shown = allocation.name if allocation.kind == "job" else endpoint_name(allocation.name)
    return allocation.model_copy(update={"display_name": shown})


async def list_nodes(gateway: AsyncGatewayClient, *, user: AuthenticatedUser) -> InventoryResponse:
    """Every node and GPU with its VRAM: held, free and measured in use, and what holds it:
    every job and endpoint for an admin, a user's own only for anyone else."""
    inventory = await _read_inventory(gateway, user_id=user.user_id)
    admin = user.role == Role.ADMIN
    for node in inventory.nodes:
        for gpu in node.gpus:
            gpu.allocations = [
                _named(allocation)
                for allocation in gpu.allocations
                if admin or allocation.user_id == user.user_id
            ]
    return inventory


async def list_joined_nodes(
    registry: AsyncNodeRegistryClient, *, admin_id: str
) -> NodeListResponse:
    """The registry's nodes: readiness, cordon, last heartbeat, mesh address, GPUs."""
    with downstream_errors("kuberay_service", passed=REGISTRY_REFUSALS):
        return await registry.run(as_user(node_ops.list_nodes(), admin_id))


async def _listed_by_gateway(gateway: AsyncGatewayClient, *, user_id: str, name: str) -> bool:
    """Whether the gateway's inventory has node ``name`` (its machine or its file's)."""
    inventory = await _read_inventory(gateway, user_id=user_id)
    return any(node.name == name for node in inventory.nodes)


async def set_node_cordoned(
    registry: AsyncNodeRegistryClient,
    gateway: AsyncGatewayClient,
    *,
    admin_id: str,
    name: str,
    cordoned: bool,
) -> NodeResponse:
    """Cordon (no new placements) or uncordon node ``name``.

    Raises:
        NodeNotJoined: the gateway lists the node, the registry does not (409).
        DownstreamRefused: no node of that name anywhere (404).
    """
    operation = as_user(node_ops.cordon_node(name, cordoned=cordoned), admin_id)
    try:
        return await registry.run(operation)
    except ServiceRefused as refused:
        if refused.status_code == 404 and await _listed_by_gateway(
            gateway, user_id=admin_id, name=name
        ):
            raise NodeNotJoined(name) from refused
        raise platform_error("kuberay_service", refused, passed=REGISTRY_REFUSALS) from refused
    except ServiceError as failed:
        raise platform_error("kuberay_service", failed, passed=REGISTRY_REFUSALS) from failed


async def drain_node(
    registry: AsyncNodeRegistryClient, gateway: AsyncGatewayClient, *, admin_id: str, name: str
) -> DrainNodeResponse:
    """Cordon node ``name`` and say what still holds it (it is drained when nothing does)."""
    node = await set_node_cordoned(registry, gateway, admin_id=admin_id, name=name, cordoned=True)
    inventory = await _read_inventory(gateway, user_id=admin_id)
    held = sum(
        gpu.held_mb for listed in inventory.nodes if listed.name == name for gpu in listed.gpus
    )
    return DrainNodeResponse(node=node, held_mb=held, drained=held == 0)
