"""``/v1/me`` and ``/v1/users``: who is calling; admins create users."""

from __future__ import annotations

from fastapi import APIRouter

from gridweave_clients.platform.models import (
    CreateUserRequest,
    RegisteredUserResponse,
    UserResponse,
)
from platform_service.routers.common import AdminDep, HmacKeyDep, SessionDep, UserDep
from platform_service.services import users

__all__ = ["router"]

router = APIRouter(tags=["users"])


@router.get("/v1/me")
def get_me(user: UserDep, session: SessionDep) -> UserResponse:
    """The calling user."""
    return users.user_response(users.get_user(session, user.user_id))


@router.post("/v1/users", status_code=201)
def create_user(
    body: CreateUserRequest, _admin: AdminDep, session: SessionDep, hmac_key: HmacKeyDep
) -> RegisteredUserResponse:
    """Create a user and its first API key, shown once (admins only)."""
    return users.create_user(
        session, hmac_key=hmac_key, email=body.email, role=body.role, key_name=body.key_name
    )
