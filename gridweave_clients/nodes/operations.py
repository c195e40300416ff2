"""kuberay-service's node registry routes as typed operations (sans-IO)."""

from __future__ import annotations

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.nodes.models import NodeListResponse

__all__ = ["NODES_PATH", "list_nodes"]

NODES_PATH = "/v1/nodes"


def list_nodes() -> Operation[NodeListResponse]:
    """Every joined node with its GPUs and liveness (a read: retried)."""
    return model_operation("GET", NODES_PATH, NodeListResponse)
