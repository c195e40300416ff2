"""The client of kuberay-service's node registry (``GET /v1/nodes``) and its wire model."""

from __future__ import annotations

from gridweave_clients.nodes.client import AsyncNodeRegistryClient, NodeRegistryClient
from gridweave_clients.nodes.models import (
    NodeGpuResponse,
    NodeListResponse,
    NodeReadiness,
    NodeResponse,
)

__all__ = [
    "AsyncNodeRegistryClient",
    "NodeGpuResponse",
    "NodeListResponse",
    "NodeReadiness",
    "NodeRegistryClient",
    "NodeResponse",
]
