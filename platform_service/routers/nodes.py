"""``/v1/nodes``: the GPUs of the cluster, with their held, free and used VRAM and what holds
it; and for admins, ``/v1/admin/nodes``: the registry's nodes, cordon / uncordon and drain."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from gridweave_clients.gateway.models import InventoryResponse
from gridweave_clients.nodes import NodeListResponse, NodeResponse
from gridweave_clients.nodes.models import CordonNodeRequest
from gridweave_clients.platform.admin import DrainNodeResponse
from platform_service.routers.common import AdminDep, JobServicesDep, NodeRegistryDep, UserDep
from platform_service.services import nodes

__all__ = ["router"]

router = APIRouter(tags=["nodes"])

#: A Kubernetes node name (a lower-case DNS-1123 subdomain), as the registry keeps them.
NodeName = Annotated[
    str,
    Path(
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    ),
]


@router.get("/v1/nodes")
async def list_nodes(user: UserDep, services: JobServicesDep) -> InventoryResponse:
    """Every node and GPU: vendor, model, VRAM held, free and measured in use, and the jobs
    and endpoints holding it (admins: all; users: their own)."""
    return await nodes.list_nodes(services.gateway, user=user)


@router.get("/v1/admin/nodes")
async def list_joined_nodes(admin: AdminDep, registry: NodeRegistryDep) -> NodeListResponse:
    """The joined nodes: Ready or NotReady, cordoned, last heartbeat, GPUs (admins)."""
    return await nodes.list_joined_nodes(registry, admin_id=admin.user_id)


@router.put("/v1/admin/nodes/{name}/cordon")
async def cordon_node(
    name: NodeName,
    body: CordonNodeRequest,
    admin: AdminDep,
    registry: NodeRegistryDep,
    services: JobServicesDep,
) -> NodeResponse:
    """Cordon the node (no new placements; what runs stays) or uncordon it (admins). A node
    not joined with a join key (this machine, a node of the inventory file) is a 409."""
    return await nodes.set_node_cordoned(
        registry, services.gateway, admin_id=admin.user_id, name=name, cordoned=body.cordoned
    )


@router.post("/v1/admin/nodes/{name}/drain")
async def drain_node(
    name: NodeName, admin: AdminDep, registry: NodeRegistryDep, services: JobServicesDep
) -> DrainNodeResponse:
    """Cordon the node and wait for its work to finish (nothing is cancelled); how much VRAM
    is still held there (admins)."""
    return await nodes.drain_node(registry, services.gateway, admin_id=admin.user_id, name=name)
