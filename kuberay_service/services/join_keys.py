"""Join keys: created by admins (shown once, stored hashed), listed, revoked, checked."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session, object_session

from kuberay_service import queries
from kuberay_service.errors import (
    JoinKeyExpired,
    JoinKeyLimit,
    JoinKeyNotFound,
    JoinKeyRevoked,
    JoinKeyUsedUp,
    UnknownJoinKey,
)
from kuberay_service.models import JoinKeyModel
from kuberay_service.schemas.join_keys import (
    CreatedJoinKeyResponse,
    CreateJoinKeyRequest,
    JoinKeyListResponse,
    JoinKeyResponse,
)
from kuberay_service.schemas.nodes import GpuSpec
from kuberay_service.services.secrets import hash_secret, new_secret

__all__ = [
    "check_node_limits",
    "count_new_use",
    "create_join_key",
    "find_usable_join_key",
    "list_join_keys",
    "revoke_join_key",
]

KEY_PREFIX = "gwjk"


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _response(key: JoinKeyModel) -> JoinKeyResponse:
    return JoinKeyResponse.model_validate(key, from_attributes=True)


def create_join_key(
    session: Session, *, request: CreateJoinKeyRequest, created_by: str | None
) -> CreatedJoinKeyResponse:
    """A new join key; the answer holds the key itself, which is never shown again."""
    secret, key_hash = new_secret(KEY_PREFIX)
    now = datetime.now(UTC)
    key = JoinKeyModel(
        id=f"jk_{secrets.token_hex(8)}",
        key_hash=key_hash,
        description=request.description,
        created_by=created_by,
        created_at=now,
        expires_at=now + timedelta(seconds=request.ttl_seconds),
        max_uses=request.max_uses,
        uses=0,
        max_gpus=request.max_gpus,
        vendor=request.vendor,
    )
    session.add(key)
    session.commit()
    return CreatedJoinKeyResponse(**_response(key).model_dump(), key=secret)


def list_join_keys(session: Session) -> JoinKeyListResponse:
    """Every join key (never the keys themselves), newest first."""
    return JoinKeyListResponse(
        join_keys=[_response(key) for key in queries.list_join_keys(session)]
    )


def revoke_join_key(session: Session, *, key_id: str) -> JoinKeyResponse:
    """Revoke ``key_id`` (again: no change); nodes that joined with it stay."""
    key = queries.find_join_key(session, key_id)
    if key is None:
        raise JoinKeyNotFound(f"no join key {key_id!r}", key_id=key_id)
    if key.revoked_at is None:
        key.revoked_at = datetime.now(UTC)
    session.commit()
    return _response(key)


def find_usable_join_key(session: Session, *, join_key: str, now: datetime) -> JoinKeyModel:
    """The join key ``join_key``, locked, if it is neither revoked nor expired.

    Raises:
        UnknownJoinKey, JoinKeyRevoked, JoinKeyExpired: each says which.
    """
    key = queries.find_join_key_by_hash(session, hash_secret(join_key))
    if key is None:
        raise UnknownJoinKey()
    if key.revoked_at is not None:
        raise JoinKeyRevoked(
            f"join key {key.id} refused: it was revoked at {_when(key.revoked_at)}"
        )
    if key.expires_at <= now:
        raise JoinKeyExpired(f"join key {key.id} refused: it expired at {_when(key.expires_at)}")
    return key


def count_new_use(key: JoinKeyModel) -> None:
    """A new node joins with ``key``: one use more, flushed.

    Raises:
        JoinKeyUsedUp: ``max_uses`` nodes joined with it already.
    """
    if key.uses >= key.max_uses:
        raise JoinKeyUsedUp(
            f"join key {key.id} refused: it is used up ({key.uses} of {key.max_uses} nodes "
            "joined with it)"
        )
    key.uses += 1
    session = object_session(key)
    assert session is not None
    session.flush()  # before any savepoint: a rolled-back one must not take the count along


def check_node_limits(key: JoinKeyModel, gpus: list[GpuSpec]) -> None:
    """Refuse a node whose GPUs break the key's limits.

    Raises:
        JoinKeyLimit: naming ``gpus`` (too many) or ``gpus[i].vendor`` (another vendor).
    """
    if key.max_gpus is not None and len(gpus) > key.max_gpus:
        raise JoinKeyLimit("gpus", f"{len(gpus)} GPUs, the key allows at most {key.max_gpus}")
    if key.vendor is not None:
        for position, gpu in enumerate(gpus):
            if gpu.vendor != key.vendor:
                raise JoinKeyLimit(
                    f"gpus[{position}].vendor", f"{gpu.vendor}: the key allows {key.vendor} only"
                )
