"""kuberay-service's node registry routes as typed operations (sans-IO).

The internal reads (``list_nodes``) and the admins' routes (join keys, removing a node;
the client sends ``X-Gridweave-Role: admin`` when made with ``role="admin"``). The nodes' own
routes (validate, register, heartbeat, leave) are called by ``deploy/join-node.sh``.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from pydantic import Field, validate_call

from gridweave_clients._core import Call, Operation, model_operation
from gridweave_clients.nodes.models import (
    CordonNodeRequest,
    CreatedJoinKeyResponse,
    CreateJoinKeyRequest,
    JoinKeyListResponse,
    JoinKeyResponse,
    NodeListResponse,
    NodeName,
    NodeResponse,
)
from gridweave_controller.vendors import GpuVendor

__all__ = [
    "JOIN_KEYS_PATH",
    "NODES_PATH",
    "cordon_node",
    "create_join_key",
    "list_join_keys",
    "list_nodes",
    "remove_node",
    "revoke_join_key",
]

NODES_PATH = "/v1/nodes"
JOIN_KEYS_PATH = f"{NODES_PATH}/join-keys"
JoinKeyId = Annotated[str, Field(strict=True, pattern=r"^jk_[0-9a-f]{1,29}$")]


def list_nodes() -> Operation[NodeListResponse]:
    """Every joined node with its GPUs and liveness (a read: retried)."""
    return model_operation("GET", NODES_PATH, NodeListResponse)


@validate_call
def create_join_key(
    *,
    ttl_seconds: int = 86_400,
    max_uses: int = 1,
    max_gpus: int | None = None,
    vendor: GpuVendor | None = None,
    description: str = "",
) -> Operation[CreatedJoinKeyResponse]:
    """A new join key (admin); the answer's ``key`` is shown this once (a write: not retried)."""
    body = CreateJoinKeyRequest(
        ttl_seconds=ttl_seconds,
        max_uses=max_uses,
        max_gpus=max_gpus,
        vendor=vendor,
        description=description,
    )
    return model_operation("POST", JOIN_KEYS_PATH, CreatedJoinKeyResponse, body=body)


def list_join_keys() -> Operation[JoinKeyListResponse]:
    """Every join key, newest first, never the keys themselves (admin; a read)."""
    return model_operation("GET", JOIN_KEYS_PATH, JoinKeyListResponse)


@validate_call
def revoke_join_key(key_id: JoinKeyId) -> Operation[JoinKeyResponse]:
    """Revoke a join key (admin; revoking twice changes nothing, so it is retried)."""
    path = f"{JOIN_KEYS_PATH}/{key_id}"
    return model_operation("DELETE", path, JoinKeyResponse)


@validate_call
def remove_node(name: NodeName) -> Operation[None]:
    """Remove a node (admin): its mesh address is freed, its peer and worker group go."""
    return Operation(Call("DELETE", f"{NODES_PATH}/{quote(name, safe='')}"), _nothing)


@validate_call
def cordon_node(name: NodeName, *, cordoned: bool) -> Operation[NodeResponse]:
    """Cordon (no new work) or uncordon a node (admin; setting it twice changes nothing)."""
    path = f"{NODES_PATH}/{quote(name, safe='')}/cordon"
    body = CordonNodeRequest(cordoned=cordoned)
    return model_operation("PUT", path, NodeResponse, body=body, idempotent=True)


def _nothing(_: bytes) -> None:
    return None
