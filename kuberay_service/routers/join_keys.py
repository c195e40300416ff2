"""``/v1/nodes/join-keys``: admins create, list and revoke join keys.

Admin: a credential acting as ``admin`` (``gridweave_runtime.auth``); the creator is
``X-Gridweave-User``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from kuberay_service.routers.common import AdminDep, SessionDep
from kuberay_service.schemas.join_keys import (
    CreatedJoinKeyResponse,
    CreateJoinKeyRequest,
    JoinKeyListResponse,
    JoinKeyResponse,
)
from kuberay_service.services import join_keys

__all__ = ["router"]

router = APIRouter(prefix="/v1/nodes/join-keys", tags=["join-keys"])

KeyId = Annotated[str, Path(min_length=1, max_length=32, pattern=r"^jk_[0-9a-f]+$")]


@router.post("", status_code=201)
def create_join_key(
    body: CreateJoinKeyRequest, caller: AdminDep, session: SessionDep
) -> CreatedJoinKeyResponse:
    """A new join key; ``key`` is in this answer only (stored hashed)."""
    return join_keys.create_join_key(session, request=body, created_by=caller.user_id)


@router.get("")
def list_join_keys(_: AdminDep, session: SessionDep) -> JoinKeyListResponse:
    """Every join key, newest first (never the keys themselves)."""
    return join_keys.list_join_keys(session)


@router.delete("/{key_id}")
def revoke_join_key(key_id: KeyId, _: AdminDep, session: SessionDep) -> JoinKeyResponse:
    """Revoke a join key: no node validates with it any more; joined nodes stay."""
    return join_keys.revoke_join_key(session, key_id=key_id)
