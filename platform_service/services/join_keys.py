"""Join keys: kept by kuberay-service's node registry; admins manage them through here.

The platform validates the request with the registry's own model, calls the registry over
HTTP with the admin's identity, and adds the command that joins a machine with the new key.
"""

from __future__ import annotations

import shlex

from gridweave_clients.nodes import (
    AsyncNodeRegistryClient,
    CreateJoinKeyRequest,
    JoinKeyListResponse,
    JoinKeyResponse,
)
from gridweave_clients.nodes import operations as node_ops
from gridweave_clients.platform.admin import NewJoinKeyResponse
from platform_service.services.downstream import USER_FACING, as_user, downstream_errors

__all__ = [
    "REGISTRY_REFUSALS",
    "create_join_key",
    "join_command",
    "list_join_keys",
    "revoke_join_key",
]

#: The registry's refusals an admin acts on (an unknown key or node is one).
REGISTRY_REFUSALS = USER_FACING | {404}


def join_command(master_url: str, key: str) -> str:
    """The shell command that joins a machine (run as root on it) with ``key``."""
    return (
        f"sudo deploy/join-node.sh --master {shlex.quote(master_url)} --join-key {shlex.quote(key)}"
    )


async def create_join_key(
    registry: AsyncNodeRegistryClient,
    *,
    admin_id: str,
    request: CreateJoinKeyRequest,
    master_url: str,
) -> NewJoinKeyResponse:
    """A new join key (its ``key`` and join command shown this once)."""
    operation = node_ops.create_join_key(**request.model_dump())
    with downstream_errors("kuberay_service", passed=REGISTRY_REFUSALS):
        created = await registry.run(as_user(operation, admin_id))
    return NewJoinKeyResponse(
        **created.model_dump(), join_command=join_command(master_url, created.key)
    )


async def list_join_keys(
    registry: AsyncNodeRegistryClient, *, admin_id: str
) -> JoinKeyListResponse:
    """Every join key, newest first, with its uses and limits (never a key itself)."""
    with downstream_errors("kuberay_service", passed=REGISTRY_REFUSALS):
        return await registry.run(as_user(node_ops.list_join_keys(), admin_id))


async def revoke_join_key(
    registry: AsyncNodeRegistryClient, *, admin_id: str, key_id: str
) -> JoinKeyResponse:
    """Revoke a join key: no machine joins with it any more; nodes that joined stay."""
    with downstream_errors("kuberay_service", passed=REGISTRY_REFUSALS):
        return await registry.run(as_user(node_ops.revoke_join_key(key_id), admin_id))
