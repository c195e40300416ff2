"""``/v1/admin/join-keys``: admins create, list and revoke the keys machines join with."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from gridweave_clients.nodes import CreateJoinKeyRequest, JoinKeyListResponse, JoinKeyResponse
from gridweave_clients.platform.admin import NewJoinKeyResponse
from platform_service.routers.common import AdminDep, NodeRegistryDep, SettingsDep
from platform_service.services import join_keys

__all__ = ["router"]

router = APIRouter(prefix="/v1/admin/join-keys", tags=["join-keys"])

KeyId = Annotated[str, Path(min_length=4, max_length=32, pattern=r"^jk_[0-9a-f]{1,29}$")]


@router.get("")
async def list_join_keys(admin: AdminDep, registry: NodeRegistryDep) -> JoinKeyListResponse:
    """Every join key, newest first: expiry, uses and limits, revoked or not (admins)."""
    return await join_keys.list_join_keys(registry, admin_id=admin.user_id)


@router.post("", status_code=201)
async def create_join_key(
    body: CreateJoinKeyRequest, admin: AdminDep, registry: NodeRegistryDep, settings: SettingsDep
) -> NewJoinKeyResponse:
    """A new join key and the command that joins a machine with it, both shown once."""
    return await join_keys.create_join_key(
        registry,
        admin_id=admin.user_id,
        request=body,
        master_url=settings.node_join_url or settings.kuberay_url,
    )


@router.delete("/{key_id}")
async def revoke_join_key(
    key_id: KeyId, admin: AdminDep, registry: NodeRegistryDep
) -> JoinKeyResponse:
    """Revoke a join key: no machine joins with it any more; joined nodes stay (admins)."""
    return await join_keys.revoke_join_key(registry, admin_id=admin.user_id, key_id=key_id)
