"""Repositories of the image registry shared with other users: they may pull them.

Only the repository's owner (the user whose id is its namespace) or an admin shares or
unshares it; the user it is shared with must exist. Sharing is per repository (its full
name) and gives ``pull`` only.
"""

from __future__ import annotations

from sqlalchemy import delete, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from gridweave_clients.platform.registry import (
    RegistryShareListResponse,
    RegistryShareResponse,
)
from gridweave_runtime.errors import InvalidRequest
from platform_service.errors import NotFound
from platform_service.models import RegistryShareModel, Role
from platform_service.services.keys import AuthenticatedUser
from platform_service.services.users import get_user

__all__ = ["is_shared_with", "list_shares", "share_repository", "unshare_repository"]


def _namespace(repository: str) -> str:
    return repository.split("/", 1)[0]


def _response(share: RegistryShareModel) -> RegistryShareResponse:
    return RegistryShareResponse(
        repository=share.repository, user_id=share.user_id, created_at=share.created_at
    )


def _check_owner(caller: AuthenticatedUser, repository: str) -> None:
    if caller.role != Role.ADMIN and _namespace(repository) != caller.user_id:
        raise InvalidRequest(
            "repository", f"only repositories under your namespace {caller.user_id}/ are yours"
        )


def is_shared_with(session: Session, *, repository: str, user_id: str) -> bool:
    """True when ``repository`` is shared with ``user_id``."""
    found = session.scalar(
        select(RegistryShareModel.user_id).where(
            RegistryShareModel.repository == repository, RegistryShareModel.user_id == user_id
        )
    )
    return found is not None


def share_repository(
    session: Session, *, caller: AuthenticatedUser, repository: str, user_id: str
) -> RegistryShareResponse:
    """Let ``user_id`` pull ``repository`` (again: answered as it is); committed."""
    _check_owner(caller, repository)
    if user_id == _namespace(repository):
        raise InvalidRequest("user_id", "the repository's owner may pull it already")
    get_user(session, user_id)
    session.execute(
        insert(RegistryShareModel)
        .values(repository=repository, user_id=user_id)
        .on_conflict_do_nothing()
    )
    share = session.get(RegistryShareModel, (repository, user_id))
    assert share is not None  # just written, or there already
    answer = _response(share)
    session.commit()
    return answer


def unshare_repository(
    session: Session, *, caller: AuthenticatedUser, repository: str, user_id: str
) -> RegistryShareResponse:
    """Stop sharing; NotFound when it was not shared; committed."""
    _check_owner(caller, repository)
    share = session.get(RegistryShareModel, (repository, user_id))
    if share is None:
        raise NotFound(resource="registry_share", id=f"{repository} {user_id}")
    answer = _response(share)
    session.execute(
        delete(RegistryShareModel).where(
            RegistryShareModel.repository == repository, RegistryShareModel.user_id == user_id
        )
    )
    session.commit()
    return answer


def list_shares(session: Session, *, user_id: str) -> RegistryShareListResponse:
    """The shares ``user_id`` granted (its repositories) and received."""
    shares = session.scalars(
        select(RegistryShareModel)
        .where(
            or_(
                RegistryShareModel.user_id == user_id,
                RegistryShareModel.repository.startswith(f"{user_id}/", autoescape=True),
            )
        )
        .order_by(RegistryShareModel.repository, RegistryShareModel.user_id)
    )
    granted: list[RegistryShareResponse] = []
    received: list[RegistryShareResponse] = []
    for share in shares:
        (received if share.user_id == user_id else granted).append(_response(share))
    return RegistryShareListResponse(granted=granted, received=received)
