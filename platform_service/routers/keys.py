"""``/v1/keys``: the calling user's API keys: list, issue (shown once), revoke."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request

from gridweave_clients.platform.models import (
    ApiKeyListResponse,
    ApiKeyResponse,
    CreateApiKeyRequest,
    NewApiKeyResponse,
)
from platform_service.routers.common import HmacKeyDep, SessionDep, UserDep
from platform_service.services import keys
from platform_service.services.accepted_keys import AcceptedKeys

__all__ = ["router"]

router = APIRouter(prefix="/v1/keys", tags=["keys"])
KeyIdPath = Annotated[str, Path(pattern=r"^[0-9a-f]{12}$", description="The key's public id.")]


@router.get("")
def list_keys(user: UserDep, session: SessionDep) -> ApiKeyListResponse:
    """The caller's keys, newest first, revoked ones included (never their secrets)."""
    return keys.list_api_keys(session, user_id=user.user_id)


@router.post("", status_code=201)
def create_key(
    body: CreateApiKeyRequest, user: UserDep, session: SessionDep, hmac_key: HmacKeyDep
) -> NewApiKeyResponse:
    """Issue another key; its text is in this answer only."""
    key = keys.issue_api_key(session, hmac_key=hmac_key, user_id=user.user_id, name=body.name)
    session.commit()
    return key


@router.delete("/{key_id}")
def revoke_key(
    key_id: KeyIdPath, user: UserDep, session: SessionDep, request: Request
) -> ApiKeyResponse:
    """Revoke one of the caller's keys at once (another user's key is not found)."""
    revoked = keys.revoke_api_key(session, user_id=user.user_id, key_id=key_id)
    accepted: AcceptedKeys = request.app.state.accepted_keys
    accepted.forget(key_id)
    return revoked
