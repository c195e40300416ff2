"""The first admin: created from the command line (``gridweave-platform create-admin``)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from gridweave_clients.platform.models import NewApiKeyResponse
from platform_service.errors import AlreadyRegistered
from platform_service.models import Role, UserModel
from platform_service.services.keys import issue_api_key
from platform_service.services.users import create_user

__all__ = ["create_admin_key"]


def create_admin_key(
    session: Session, *, hmac_key: bytes, email: str | None, key_name: str
) -> NewApiKeyResponse:
    """A new key of the admin with ``email`` (made admin), or of a new admin; committed."""
    if email is not None:
        user = session.scalar(select(UserModel).where(UserModel.email == email).with_for_update())
        if user is not None:
            user.role = Role.ADMIN
            key = issue_api_key(session, hmac_key=hmac_key, user_id=user.id, name=key_name)
            session.commit()
            return key
    try:
        return create_user(
            session, hmac_key=hmac_key, email=email, role=Role.ADMIN, key_name=key_name
        ).api_key
    except AlreadyRegistered:  # created concurrently: take that one
        return create_admin_key(session, hmac_key=hmac_key, email=email, key_name=key_name)
