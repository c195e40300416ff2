"""The client of kuberay-service's node registry (``/v1/nodes``) and its wire models."""

from __future__ import annotations

from gridweave_clients.nodes.client import AsyncNodeRegistryClient, NodeRegistryClient
from gridweave_clients.nodes.models import (
    CreatedJoinKeyResponse,
    CreateJoinKeyRequest,
    JoinKeyListResponse,
    JoinKeyResponse,
    NodeGpuResponse,
    NodeListResponse,
    NodeReadiness,
    NodeResponse,
)

__all__ = [
    "AsyncNodeRegistryClient",
    "CreateJoinKeyRequest",
    "CreatedJoinKeyResponse",
    "JoinKeyListResponse",
    "JoinKeyResponse",
    "NodeGpuResponse",
    "NodeListResponse",
    "NodeReadiness",
    "NodeRegistryClient",
    "NodeResponse",
]
