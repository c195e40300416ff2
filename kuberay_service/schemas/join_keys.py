"""Request and answer bodies of ``/v1/nodes/join-keys`` (admins only).

Declared in the clients package (:mod:`gridweave_clients.nodes.models`), which the admin
client sends and reads: one declaration for both sides.
"""

from __future__ import annotations

from gridweave_clients.nodes.models import (
    MAX_JOIN_KEY_TTL_SECONDS,
    CreatedJoinKeyResponse,
    CreateJoinKeyRequest,
    JoinKeyListResponse,
    JoinKeyResponse,
)

__all__ = [
    "MAX_JOIN_KEY_TTL_SECONDS",
    "CreateJoinKeyRequest",
    "CreatedJoinKeyResponse",
    "JoinKeyListResponse",
    "JoinKeyResponse",
]
