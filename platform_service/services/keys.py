"""API keys: issued, listed, revoked, and checked on every request.

A key reads ``gw_live_<key id>_<secret>``: the prefix tells a Gridweave key from any other
secret (secret scanners, logs), the key id (12 hex digits) finds its row and names it in
the API, and the secret is 32 random bytes (base64url). Only HMAC-SHA256(API key secret,
secret) is stored.

Why a keyed fast hash and not bcrypt or Argon2: those are slow on purpose so a stolen
table cannot be brute-forced back to *guessable* passwords. A 256-bit random secret cannot
be guessed at any hash speed, so slowness would buy nothing, while it would cost every
request 50-250 ms of CPU (a key is checked on every call). The HMAC key
(``PLATFORM_API_KEY_SECRET``, or one derived from the platform's service token) lives outside the
database, so the table alone cannot even confirm a candidate key. Comparison is
constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from gridweave_clients.platform.models import (
    API_KEY_PREFIX,
    ApiKeyListResponse,
    ApiKeyResponse,
    NewApiKeyResponse,
)
from platform_service.errors import NotFound
from platform_service.models import ApiKeyModel, UserModel
from platform_service.settings import PlatformSettings

__all__ = [
    "AuthenticatedUser",
    "api_key_secret",
    "authenticate",
    "issue_api_key",
    "list_api_keys",
    "mark_key_used",
    "revoke_api_key",
]

#: ``last_used_at`` is written at most this often per key.
LAST_USED_RESOLUTION = timedelta(minutes=1)
_KEY_ID_BYTES = 6  # 12 hex digits: a collision is retried by the UNIQUE constraint's caller
_SECRET_BYTES = 32
_KEY_PATTERN = re.compile(
    re.escape(API_KEY_PREFIX) + r"(?P<key_id>[0-9a-f]{12})_(?P<secret>[A-Za-z0-9_-]{43})"
)


@dataclass(frozen=True, slots=True)
class AuthenticatedUser:
    """Who a request's API key (or dashboard session) belongs to; ``key_id`` is None for a
    session signed in with an email code."""

    user_id: str
    role: str
    key_id: str | None


def api_key_secret(settings: PlatformSettings) -> bytes:
    """The HMAC key: PLATFORM_API_KEY_SECRET, else one derived from the platform's token."""
    if settings.api_key_secret is not None and settings.api_key_secret.get_secret_value():
        return settings.api_key_secret.get_secret_value().encode()
    token = settings.own_token().encode()
    return hmac.new(token, b"gridweave platform api keys", hashlib.sha256).digest()


def _hash_secret(hmac_key: bytes, secret: str) -> str:
    return hmac.new(hmac_key, secret.encode(), hashlib.sha256).hexdigest()


def _key_response(key: ApiKeyModel) -> ApiKeyResponse:
    return ApiKeyResponse(
        key_id=key.key_id,
        prefix=f"{API_KEY_PREFIX}{key.key_id}",
        name=key.name,
        created_at=key.created_at,
        revoked_at=key.revoked_at,
        last_used_at=key.last_used_at,
    )


def issue_api_key(
    session: Session, *, hmac_key: bytes, user_id: str, name: str
) -> NewApiKeyResponse:
    """A new key for ``user_id`` (flushed, not committed); its text is in the answer only."""
    key_id = secrets.token_hex(_KEY_ID_BYTES)
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    key = ApiKeyModel(
        key_id=key_id, user_id=user_id, name=name, secret_hash=_hash_secret(hmac_key, secret)
    )
    session.add(key)
    session.flush()
    session.refresh(key)  # created_at, from the server
    listed = _key_response(key)
    return NewApiKeyResponse(**listed.model_dump(), api_key=f"{API_KEY_PREFIX}{key_id}_{secret}")


def authenticate(session: Session, *, hmac_key: bytes, presented: str) -> AuthenticatedUser | None:
    """The owner of the live key ``presented``; None when malformed, unknown or revoked."""
    match = _KEY_PATTERN.fullmatch(presented)
    if match is None:
        return None
    row = session.execute(
        select(ApiKeyModel.secret_hash, ApiKeyModel.revoked_at, UserModel.id, UserModel.role)
        .join(UserModel, UserModel.id == ApiKeyModel.user_id)
        .where(ApiKeyModel.key_id == match["key_id"])
    ).one_or_none()
    if row is None:
        return None
    secret_hash, revoked_at, user_id, role = row
    if not hmac.compare_digest(_hash_secret(hmac_key, match["secret"]), secret_hash):
        return None
    if revoked_at is not None:
        return None
    return AuthenticatedUser(user_id=user_id, role=role, key_id=match["key_id"])


def mark_key_used(session: Session, *, key_id: str) -> None:
    """Record that ``key_id`` authenticated a request now (committed; skipped when it was
    recorded less than :data:`LAST_USED_RESOLUTION` ago)."""
    now = datetime.now(UTC)
    session.execute(
        update(ApiKeyModel)
        .where(
            ApiKeyModel.key_id == key_id,
            or_(
                ApiKeyModel.last_used_at.is_(None),
                ApiKeyModel.last_used_at < now - LAST_USED_RESOLUTION,
            ),
        )
        .values(last_used_at=now)
    )
    session.commit()


def list_api_keys(session: Session, *, user_id: str) -> ApiKeyListResponse:
    """The user's keys, newest first (revoked ones too)."""
    keys = session.scalars(
        select(ApiKeyModel)
        .where(ApiKeyModel.user_id == user_id)
        .order_by(ApiKeyModel.created_at.desc(), ApiKeyModel.id.desc())
    )
    return ApiKeyListResponse(keys=[_key_response(key) for key in keys])


def revoke_api_key(session: Session, *, user_id: str, key_id: str) -> ApiKeyResponse:
    """Revoke one of the user's keys (again: answered as it is); another's is not found."""
    key = session.scalar(
        select(ApiKeyModel)
        .where(ApiKeyModel.key_id == key_id, ApiKeyModel.user_id == user_id)
        .with_for_update()
    )
    if key is None:
        raise NotFound(resource="api_key", id=key_id)
    if key.revoked_at is None:
        key.revoked_at = datetime.now(UTC)
        session.flush()
    answer = _key_response(key)
    session.commit()
    return answer
