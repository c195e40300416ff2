"""The platform tables: users and their API keys.

Invariants:

- ``users``: ``id`` is the user id every other service knows (credit accounts, jobs'
  ``spec.userId``, usage); never reused. ``role`` is ``user`` or ``admin``. ``email`` is
  unique among users (lower-cased); ``verified_at`` is set once the faucet verified it. A
  user signing up has a row with ``verified_at`` NULL and no key until the code is verified.
- ``api_keys``: ``key_id`` is public (it is in the key's text and names the key in the API);
  only ``secret_hash`` = HMAC-SHA256(API key secret, the key's secret part) is stored, never
  the key. A key is revoked once (``revoked_at``) and never comes back.
- ``api_keys.last_used_at``: when the key last authenticated a request, written at most
  once a minute per key (a read per request must not become a write per request).
- ``web_sessions``: the dashboard's sign-ins. Only HMAC-SHA256(API key secret, token) of
  the session cookie and of its CSRF token are stored. A session ends at ``expires_at``, at
  sign-out (``ended_at``), or when the key it was started with is revoked; a session signed
  in with an email code has no key (``key_id`` NULL) and ends only by time or sign-out.
- ``registry_quotas``: a user's image-registry quota in bytes, set by an admin; a user
  without a row has the default (``REGISTRY_QUOTA_GB``).
- ``registry_blobs``: what a user's images take in the registry: one row per (user, blob
  digest), so a blob in two of a user's images counts once for that user. Rows come from the
  registry's push notifications and are replaced by each reconciliation from its storage.
- ``registry_shares``: a repository (its full name, ``<owner id>/<name>``) another user may
  pull; written by the repository's owner (or an admin), one row per (repository, user).
- ``user_limits``: what an admin set for a user: its quotas (``max_gpus``, ``max_vram_mb``:
  what its unfinished jobs and deployed endpoints may hold at once) and its weight in the
  scheduler's fair share; NULL (or no row): no quota, weight 1.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    func,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "ApiKeyModel",
    "PlatformBase",
    "RegistryBlobModel",
    "RegistryQuotaModel",
    "RegistryShareModel",
    "Role",
    "UserLimitsModel",
    "UserModel",
    "WebSessionModel",
]


class PlatformBase(DeclarativeBase):
    """Declarative base of platform_service's tables."""


class Role:
    """What a user may do: its own jobs and keys (``user``), or also manage users (``admin``)."""

    USER = "user"
    ADMIN = "admin"


class UserModel(PlatformBase):
    """A platform user."""

    __tablename__ = "users"
    __table_args__ = (CheckConstraint("role IN ('user', 'admin')", name="role_known"),)

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    email: Mapped[str | None] = mapped_column(String(254), unique=True, default=None)
    role: Mapped[str] = mapped_column(String(16), default=Role.USER)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    verified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class ApiKeyModel(PlatformBase):
    """One API key of a user: its public id and the HMAC of its secret."""

    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_user_id", "user_id"),)

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    key_id: Mapped[str] = mapped_column(String(32), unique=True)
    user_id: Mapped[str] = mapped_column(String(128), ForeignKey("users.id"))
    name: Mapped[str] = mapped_column(String(100))
    secret_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class WebSessionModel(PlatformBase):
    """A dashboard sign-in: the hashes of its cookie and CSRF token, and when it ends."""

    __tablename__ = "web_sessions"
    __table_args__ = (Index("ix_web_sessions_user_id", "user_id"),)

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    csrf_hash: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[str] = mapped_column(String(128), ForeignKey("users.id"))
    # the API key it signed in with (revoking it ends the session); None: an email code
    key_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class RegistryQuotaModel(PlatformBase):
    """A user's registry quota, bytes, when an admin set one."""

    __tablename__ = "registry_quotas"
    __table_args__ = (CheckConstraint("quota_bytes >= 0", name="quota_not_negative"),)

    user_id: Mapped[str] = mapped_column(String(128), ForeignKey("users.id"), primary_key=True)
    quota_bytes: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class RegistryBlobModel(PlatformBase):
    """One blob (layer, config or manifest) in a user's registry namespace, and its size."""

    __tablename__ = "registry_blobs"
    __table_args__ = (
        PrimaryKeyConstraint("user_id", "digest"),
        CheckConstraint("size_bytes >= 0", name="size_not_negative"),
    )

    user_id: Mapped[str] = mapped_column(String(128))
    digest: Mapped[str] = mapped_column(String(160))
    size_bytes: Mapped[int] = mapped_column(BigInteger)


class RegistryShareModel(PlatformBase):
    """A repository another user may pull."""

    __tablename__ = "registry_shares"
    __table_args__ = (
        PrimaryKeyConstraint("repository", "user_id"),
        Index("ix_registry_shares_user_id", "user_id"),
    )

    repository: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(128), ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class UserLimitsModel(PlatformBase):
    """A user's quotas and share weight, as an admin set them (NULL: none, weight 1)."""

    __tablename__ = "user_limits"
    __table_args__ = (
        CheckConstraint("max_gpus IS NULL OR max_gpus >= 0", name="max_gpus_not_negative"),
        CheckConstraint("max_vram_mb IS NULL OR max_vram_mb >= 0", name="max_vram_not_negative"),
        CheckConstraint("share_weight IS NULL OR share_weight > 0", name="share_weight_positive"),
    )

    user_id: Mapped[str] = mapped_column(String(128), ForeignKey("users.id"), primary_key=True)
    max_gpus: Mapped[int | None] = mapped_column(Integer, default=None)
    max_vram_mb: Mapped[int | None] = mapped_column(BigInteger, default=None)
    share_weight: Mapped[float | None] = mapped_column(Float, default=None)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )
