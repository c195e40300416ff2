"""``/v1/nodes``: nodes join (validate, register), stay alive (heartbeat) and leave.

- ``POST /v1/nodes/validate``: public (no service token), the join key in the body; rate
  limited per client address.
- ``POST /v1/nodes/register``, ``/heartbeat``, ``/leave``: the node's own token from
  validate (``Authorization: Bearer``), no service token.
- ``GET /v1/nodes``: a service token (the gateway's inventory and admins read it).
- ``DELETE /v1/nodes/{name}``: an admin removes a node.
- ``PUT /v1/nodes/{name}/cordon``: an admin cordons (no new work) or uncordons a node.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response

from gridweave_clients.nodes import NodeListResponse, NodeResponse
from gridweave_runtime.auth import callable_by
from kuberay_service.routers.common import (
    AdminDep,
    NodeTokenDep,
    SessionDep,
    SettingsDep,
    count_validation,
    reconcile_nodes,
)
from kuberay_service.schemas.nodes import (
    HOSTNAME_PATTERN,
    CordonNodeRequest,
    HeartbeatRequest,
    ValidatedNodeResponse,
    ValidateNodeRequest,
)
from kuberay_service.services import nodes

__all__ = ["NODE_PUBLIC_PATHS", "router"]

PREFIX = "/v1/nodes"
#: Served without a service token: each checks the join key or the node token itself.
NODE_PUBLIC_PATHS = frozenset(
    f"{PREFIX}/{name}" for name in ("validate", "register", "heartbeat", "leave")
)

router = APIRouter(prefix=PREFIX, tags=["nodes"])

NodeName = Annotated[str, Path(min_length=1, max_length=253, pattern=HOSTNAME_PATTERN)]


@router.post("/validate", dependencies=[Depends(count_validation)])
def validate_node(
    body: ValidateNodeRequest, session: SessionDep, settings: SettingsDep, request: Request
) -> ValidatedNodeResponse:
    """A node with a join key: its mesh address, node token, the master's peer, K3s, registry."""
    answer = nodes.validate_node(session, request=body, settings=settings)
    reconcile_nodes(request)
    return answer


@router.post("/register")
def register_node(
    token: NodeTokenDep, session: SessionDep, settings: SettingsDep, request: Request
) -> NodeResponse:
    """The node's agent joined the cluster: the node is Ready while heartbeats arrive."""
    answer = nodes.register_node(session, token=token, settings=settings)
    reconcile_nodes(request)
    return answer


@router.post("/heartbeat")
def heartbeat_node(
    body: HeartbeatRequest, token: NodeTokenDep, session: SessionDep, settings: SettingsDep
) -> NodeResponse:
    """The node is alive: each GPU's health and free VRAM."""
    return nodes.heartbeat_node(session, token=token, request=body, settings=settings)


@router.post("/leave", status_code=204)
def leave_node(token: NodeTokenDep, session: SessionDep, request: Request) -> Response:
    """The node leaves: its mesh address is free again, its token void."""
    nodes.leave_node(session, token=token)
    reconcile_nodes(request)
    return Response(status_code=204)


@router.get("", dependencies=callable_by("gateway", "admin"))
def list_nodes(session: SessionDep, settings: SettingsDep) -> NodeListResponse:
    """Every node: GPUs, liveness (Ready/NotReady), mesh address, joined-at."""
    return nodes.list_nodes(session, settings=settings)


@router.delete("/{name}", status_code=204)
def remove_node(name: NodeName, _: AdminDep, session: SessionDep, request: Request) -> Response:
    """An admin removes a node: its mesh address is free again, its token void."""
    nodes.remove_node(session, name=name)
    reconcile_nodes(request)
    return Response(status_code=204)


@router.put("/{name}/cordon")
def cordon_node(
    name: NodeName, body: CordonNodeRequest, _: AdminDep, session: SessionDep, settings: SettingsDep
) -> NodeResponse:
    """An admin cordons the node (no new placements) or uncordons it; running work stays."""
    return nodes.set_node_cordoned(session, name=name, cordoned=body.cordoned, settings=settings)
