"""The blocking and asyncio clients of kuberay-service's node registry."""

from __future__ import annotations

from gridweave_clients.base import AsyncInternalClient, InternalClient, awaiting, blocking
from gridweave_clients.nodes import operations as ops

__all__ = ["AsyncNodeRegistryClient", "NodeRegistryClient"]


class NodeRegistryClient(InternalClient):
    """kuberay-service (port 8800): the joined nodes and their GPUs.

    The join-key methods, ``remove_node`` and ``cordon_node`` are an admin's: make the client with
    ``role="admin"``.
    """

    service = "kuberay_service"

    list_nodes = blocking(ops.list_nodes)
    remove_node = blocking(ops.remove_node)
    cordon_node = blocking(ops.cordon_node)
    create_join_key = blocking(ops.create_join_key)
    list_join_keys = blocking(ops.list_join_keys)
    revoke_join_key = blocking(ops.revoke_join_key)


class AsyncNodeRegistryClient(AsyncInternalClient):
    """The node registry over asyncio: the methods of :class:`NodeRegistryClient`, awaited."""

    service = "kuberay_service"

    list_nodes = awaiting(ops.list_nodes)
    remove_node = awaiting(ops.remove_node)
    cordon_node = awaiting(ops.cordon_node)
    create_join_key = awaiting(ops.create_join_key)
    list_join_keys = awaiting(ops.list_join_keys)
    revoke_join_key = awaiting(ops.revoke_join_key)
