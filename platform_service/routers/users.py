"""``/v1/me`` and ``/v1/users``: who is calling; admins create users. ``/v1/admin/users``:
admins list users and grant them credits."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Path, Query
from starlette.concurrency import run_in_threadpool

from gridweave_clients.platform.admin import (
    CreditGrantRequest,
    CreditGrantResponse,
    UserListResponse,
)
from gridweave_clients.platform.models import (
    IDEMPOTENCY_HEADER,
    CreateUserRequest,
    RegisteredUserResponse,
    UserResponse,
)
from platform_service.routers.common import (
    AdminDep,
    CreditDep,
    HmacKeyDep,
    SessionDep,
    UserDep,
)
from platform_service.services import credit_grants, users

__all__ = ["router"]

router = APIRouter(tags=["users"])

UserIdPath = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._-]+$")]
GrantKey = Annotated[
    str,
    Header(
        alias=IDEMPOTENCY_HEADER,
        min_length=8,
        max_length=64,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="One per grant: the same key again answers the first grant, mints nothing.",
    ),
]


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


@router.get("/v1/admin/users")
def list_users(
    _admin: AdminDep,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> UserListResponse:
    """One page of users, oldest first, and how many there are (admins only)."""
    return users.list_users(session, limit=limit, offset=offset)


@router.post("/v1/admin/users/{user_id}/credit-grants", status_code=201)
async def grant_credits(
    user_id: UserIdPath,
    body: CreditGrantRequest,
    idempotency_key: GrantKey,
    admin: AdminDep,
    session: SessionDep,
    credit: CreditDep,
) -> CreditGrantResponse:
    """Give the user ``amount`` micro-credits, once per ``Idempotency-Key`` (admins only)."""
    await run_in_threadpool(users.get_user, session, user_id)  # 404 for no such user
    return await credit_grants.grant_credits(
        credit,
        admin_id=admin.user_id,
        user_id=user_id,
        amount=body.amount,
        idempotency_key=idempotency_key,
    )
