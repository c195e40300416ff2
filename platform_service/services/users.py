"""Users: created by an admin, by the bootstrap command, or by a verified sign-up."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gridweave_clients.platform.admin import UserListResponse
from gridweave_clients.platform.models import RegisteredUserResponse, UserResponse
from platform_service.errors import AlreadyRegistered, NotFound
from platform_service.models import Role, UserModel
from platform_service.services.keys import issue_api_key

__all__ = ["create_user", "get_user", "list_users", "new_user_id", "user_response"]


def new_user_id() -> str:
    """A fresh user id (``usr-`` and 16 hex digits): what every other service knows."""
    return f"usr-{secrets.token_hex(8)}"


def user_response(user: UserModel) -> UserResponse:
    """The API's view of a user row."""
    return UserResponse(
        user_id=user.id,
        email=user.email,
        role="admin" if user.role == Role.ADMIN else "user",
        created_at=user.created_at,
        verified_at=user.verified_at,
    )


def get_user(session: Session, user_id: str) -> UserModel:
    """One user; NotFound when there is none."""
    user = session.get(UserModel, user_id)
    if user is None:
        raise NotFound(resource="user", id=user_id)
    return user


def list_users(session: Session, *, limit: int, offset: int) -> UserListResponse:
    """One page of users, oldest first (ties by id), and how many there are."""
    rows = session.scalars(
        select(UserModel).order_by(UserModel.created_at, UserModel.id).limit(limit).offset(offset)
    )
    total = session.scalar(select(func.count()).select_from(UserModel)) or 0
    return UserListResponse(users=[user_response(user) for user in rows], total=total)


def create_user(
    session: Session, *, hmac_key: bytes, email: str | None, role: str, key_name: str
) -> RegisteredUserResponse:
    """A new user with its first key, committed; 409 naming ``email`` when it is taken.

    The email counts as verified: an admin vouches for it, so a sign-up with it is refused
    rather than handing its mailbox a key to this account.
    """
    if email is not None and session.scalar(select(UserModel.id).where(UserModel.email == email)):
        raise AlreadyRegistered(field="email")
    user = UserModel(id=new_user_id(), email=email, role=role, verified_at=datetime.now(UTC))
    session.add(user)
    try:
        session.flush()
    except IntegrityError as exc:  # the same email, created concurrently
        session.rollback()
        raise AlreadyRegistered(field="email") from exc
    session.refresh(user)
    key = issue_api_key(session, hmac_key=hmac_key, user_id=user.id, name=key_name)
    answer = RegisteredUserResponse(user=user_response(user), api_key=key)
    session.commit()
    return answer
