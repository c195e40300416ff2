"""The blocking and asyncio clients of kuberay-service's node registry."""

from __future__ import annotations

from gridweave_clients.base import AsyncInternalClient, InternalClient, awaiting, blocking
from gridweave_clients.nodes import operations as ops

__all__ = ["AsyncNodeRegistryClient", "NodeRegistryClient"]


class NodeRegistryClient(InternalClient):
    """kuberay-service (port 8800): the joined nodes and their GPUs."""

    service = "kuberay_service"

    list_nodes = blocking(ops.list_nodes)


class AsyncNodeRegistryClient(AsyncInternalClient):
    """The node registry over asyncio: the methods of :class:`NodeRegistryClient`, awaited."""

    service = "kuberay_service"

    list_nodes = awaiting(ops.list_nodes)
