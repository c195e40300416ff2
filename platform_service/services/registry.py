"""The image registry's rules: who may pull and push what, quotas, and the usage counted.

Namespaces: a repository ``<user id>/<name>`` belongs to that user. A user is granted
``pull``, ``push`` and ``delete`` on its own repositories, ``pull`` on those shared with it
(:mod:`platform_service.services.registry_shares`), admins everything; another user's
repository is refused. The public namespace (``REGISTRY_PUBLIC_NAMESPACE``, ``gridweave``:
Gridweave's own images) may be pulled by anyone, without credentials too; only admins push
there. Usage is the sum of the sizes of the distinct blobs (layers,
configs, manifests) in a user's namespace, so a layer in two of its images counts once. It
is counted from the registry's push notifications and replaced by each reconciliation from
the registry's storage (which also gives back what a garbage collection freed).

Over quota (usage >= quota), push is left out of every token: a request to push is refused
with a message naming the usage and the quota; pulls and deletes are still granted. The
quota is checked when a push asks for its token, so the push that crosses the quota
completes and the next one is refused.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from gridweave_clients.platform.registry import (
    RegistryEvent,
    RegistryUsageListResponse,
    RegistryUsageReport,
    RegistryUsageResponse,
    format_size,
)
from gridweave_runtime.errors import InvalidRequest
from platform_service.errors import RegistryPushRefused, RegistryReadOnly, RegistryScopeRefused
from platform_service.models import RegistryBlobModel, RegistryQuotaModel, Role, UserModel
from platform_service.services.keys import AuthenticatedUser
from platform_service.services.registry_shares import is_shared_with
from platform_service.services.users import get_user

__all__ = [
    "MaintenanceWindow",
    "Scope",
    "anonymous_access",
    "get_registry_usage",
    "grant_access",
    "list_registry_usage",
    "parse_scopes",
    "record_registry_events",
    "replace_registry_usage",
    "set_registry_quota",
]

_OWNER_ACTIONS = frozenset({"pull", "push", "delete"})
_COUNTED_ACTIONS = frozenset({"push", "mount"})


@dataclass(frozen=True)
class Scope:
    """One ``type:name:actions`` the client asks for."""

    type: str
    name: str
    actions: frozenset[str]


class MaintenanceWindow:
    """Whether the registry is read-only for a garbage collection (in this process), and
    until when tokens that let a client write (push, delete) may still be in use."""

    def __init__(self, token_seconds: int) -> None:
        self._until = 0.0
        # A previous platform process (same signing key) may have granted writes just
        # before it stopped: counted as if this one had, at its start.
        self._writes_until = time.monotonic() + token_seconds

    def set(self, *, read_only: bool, seconds: int) -> None:
        """Enter read-only for at most ``seconds`` (a crashed collector cannot leave it on)."""
        self._until = time.monotonic() + seconds if read_only else 0.0

    @property
    def read_only(self) -> bool:
        """True while a collection runs."""
        return time.monotonic() < self._until

    def writes_granted(self, access: Sequence[Mapping[str, Any]], lifetime: int) -> None:
        """Note a token granting ``access`` for ``lifetime`` seconds (pull-only: nothing)."""
        if any(set(item["actions"]) - {"pull"} for item in access):
            self._writes_until = max(self._writes_until, time.monotonic() + lifetime)

    @property
    def writes_expire_in(self) -> int:
        """Seconds until the last token granting a write expires (0: none is valid)."""
        return max(0, math.ceil(self._writes_until - time.monotonic()))


def parse_scopes(scopes: Sequence[str]) -> list[Scope]:
    """The ``scope`` parameters; 422 naming ``scope`` when one is malformed."""
    parsed = []
    for text in scopes:
        for item in text.split(" "):
            if not item:
                continue
            kind, _, rest = item.partition(":")
            name, _, actions = rest.rpartition(":")
            if not kind or not name or not actions:
                raise InvalidRequest("scope", f"{item!r}: expected type:name:actions")
            parsed.append(Scope(kind, name, frozenset(actions.split(","))))
    return parsed


def namespace_of(repository: str) -> str:
    """The namespace (owner) of a repository name: its first path component."""
    return repository.split("/", 1)[0]


def _quota_bytes(session: Session, user_id: str, default_quota: int) -> tuple[int, bool]:
    quota = session.scalar(
        select(RegistryQuotaModel.quota_bytes).where(RegistryQuotaModel.user_id == user_id)
    )
    return (default_quota, True) if quota is None else (quota, False)


def _usage(session: Session, namespace: str) -> tuple[int, int]:
    size, count = session.execute(
        select(func.coalesce(func.sum(RegistryBlobModel.size_bytes), 0), func.count()).where(
            RegistryBlobModel.user_id == namespace
        )
    ).one()
    return int(size), int(count)


def get_registry_usage(
    session: Session, *, user_id: str, default_quota: int
) -> RegistryUsageResponse:
    """A user's usage and quota; NotFound for an unknown user."""
    get_user(session, user_id)
    quota, is_default = _quota_bytes(session, user_id, default_quota)
    usage, blobs = _usage(session, user_id)
    return RegistryUsageResponse(
        user_id=user_id,
        quota_bytes=quota,
        usage_bytes=usage,
        blobs=blobs,
        quota_is_default=is_default,
    )


def list_registry_usage(
    session: Session, *, limit: int, offset: int, default_quota: int
) -> RegistryUsageListResponse:
    """Every user's usage and quota, most used first (then by user id), a page at a time."""
    used = (
        select(
            RegistryBlobModel.user_id,
            func.sum(RegistryBlobModel.size_bytes).label("usage_bytes"),
            func.count().label("blobs"),
        )
        .group_by(RegistryBlobModel.user_id)
        .subquery()
    )
    usage_bytes = func.coalesce(used.c.usage_bytes, 0)
    rows = session.execute(
        select(UserModel.id, RegistryQuotaModel.quota_bytes, usage_bytes, used.c.blobs)
        .outerjoin(RegistryQuotaModel, RegistryQuotaModel.user_id == UserModel.id)
        .outerjoin(used, used.c.user_id == UserModel.id)
        .order_by(usage_bytes.desc(), UserModel.id)
        .limit(limit)
        .offset(offset)
    ).all()
    total = session.scalar(select(func.count()).select_from(UserModel)) or 0
    return RegistryUsageListResponse(
        users=[
            RegistryUsageResponse(
                user_id=user_id,
                quota_bytes=default_quota if quota is None else quota,
                usage_bytes=int(usage),
                blobs=int(blobs or 0),
                quota_is_default=quota is None,
            )
            for user_id, quota, usage, blobs in rows
        ],
        total=total,
    )


def set_registry_quota(
    session: Session, *, user_id: str, quota_bytes: int, default_quota: int
) -> RegistryUsageResponse:
    """Set a user's quota (taking effect at its next token), committed."""
    get_user(session, user_id)
    statement = insert(RegistryQuotaModel).values(user_id=user_id, quota_bytes=quota_bytes)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=[RegistryQuotaModel.user_id],
            set_={"quota_bytes": quota_bytes, "updated_at": func.now()},
        )
    )
    session.flush()
    answer = get_registry_usage(session, user_id=user_id, default_quota=default_quota)
    session.commit()
    return answer


def _refuse_push_over_quota(session: Session, namespace: str, default_quota: int) -> None:
    quota, _ = _quota_bytes(session, namespace, default_quota)
    usage, _ = _usage(session, namespace)
    if usage >= quota:
        raise RegistryPushRefused(
            f"registry quota exceeded: {namespace} uses {format_size(usage)} of its "
            f"{format_size(quota)} quota; delete images (the space returns after the next "
            "garbage collection) or ask an admin to raise the quota",
            usage_bytes=usage,
            quota_bytes=quota,
        )


def _without_push(
    session: Session,
    repository: str,
    actions: frozenset[str],
    *,
    read_only: bool,
    default_quota: int,
) -> frozenset[str]:
    """``actions`` without push when the registry is read-only or the namespace over quota.

    A request that then keeps nothing but pull was a push: it is refused with the reason, so
    the client prints it instead of the registry's bare 401 (a delete, asked with push, goes
    on: it is how space is freed).
    """
    if not read_only:
        try:
            _refuse_push_over_quota(session, namespace_of(repository), default_quota)
        except RegistryPushRefused:
            if actions - {"pull", "push", "*"}:
                return actions - {"push", "*"}
            raise
        return actions
    if actions - {"pull", "push", "*"}:
        return actions - {"push", "*"}
    raise RegistryReadOnly()


def grant_access(
    session: Session,
    *,
    user: AuthenticatedUser,
    scopes: Sequence[Scope],
    default_quota: int,
    read_only: bool,
    public_namespace: str = "",
) -> list[dict[str, Any]]:
    """The ``access`` claim for ``scopes``: what of each the user may do.

    Raises:
        RegistryScopeRefused: nothing asked for may be granted (another user's repository),
            or more than pull on a repository shared with the user.
        RegistryPushRefused: a push into a namespace over its quota.
        RegistryReadOnly: a push while a garbage collection runs.
    """
    access: list[dict[str, Any]] = []
    refused: list[str] = []
    for scope in scopes:
        admin = user.role == Role.ADMIN
        if scope.type != "repository":
            actions = scope.actions if admin else frozenset()
        elif admin:
            actions = scope.actions
        elif namespace_of(scope.name) == user.user_id:
            wanted = _OWNER_ACTIONS if "*" in scope.actions else scope.actions
            actions = wanted & _OWNER_ACTIONS
        elif namespace_of(scope.name) == public_namespace or is_shared_with(
            session, repository=scope.name, user_id=user.user_id
        ):
            if scope.actions - {"pull"}:  # a push into it: say why rather than a bare 401
                raise RegistryScopeRefused(
                    f"{scope.name} is open to you for pull only", refused=[scope.name]
                )
            actions = scope.actions
        else:
            actions = frozenset()
        if scope.type == "repository" and actions & {"push", "*"}:
            actions = _without_push(
                session, scope.name, actions, read_only=read_only, default_quota=default_quota
            )
        if not actions:
            refused.append(f"{scope.type}:{scope.name}")
            continue
        access.append({"type": scope.type, "name": scope.name, "actions": sorted(actions)})
    if refused and not access:
        raise RegistryScopeRefused(
            f"access to {', '.join(refused)} is refused: a user may use only the "
            f"repositories under its own namespace {user.user_id}/ and pull those shared "
            "with it",
            refused=refused,
        )
    return access


def anonymous_access(
    scopes: Sequence[Scope], *, public_namespace: str
) -> list[dict[str, Any]] | None:
    """The ``access`` claim of a client without credentials: pull in the public namespace.

    None when anything else is asked (the client must log in), or nothing at all.
    """
    if not scopes or not public_namespace:
        return None
    for scope in scopes:
        public = scope.type == "repository" and namespace_of(scope.name) == public_namespace
        if not public or scope.actions != {"pull"}:
            return None
    return [{"type": s.type, "name": s.name, "actions": ["pull"]} for s in scopes]


def record_registry_events(session: Session, events: Sequence[RegistryEvent]) -> int:
    """Count the blobs the registry reported pushed (or mounted), once per namespace; committed.

    Returns how many events were counted.
    """
    rows = {
        (namespace_of(event.target.repository), event.target.digest): event.target.size
        for event in events
        if event.action in _COUNTED_ACTIONS and event.target.repository and event.target.digest
    }
    if rows:
        statement = insert(RegistryBlobModel).values(
            [
                {"user_id": namespace, "digest": digest, "size_bytes": size}
                for (namespace, digest), size in sorted(rows.items())
            ]
        )
        session.execute(statement.on_conflict_do_nothing())
    session.commit()
    return len(rows)


def replace_registry_usage(session: Session, report: RegistryUsageReport) -> int:
    """Replace every counted blob with what the registry's storage holds; committed.

    Returns how many (namespace, blob) rows are counted now.
    """
    rows = {(blob.namespace, blob.digest): blob.size_bytes for blob in report.blobs}
    session.execute(delete(RegistryBlobModel))
    ordered = sorted(rows.items())
    for start in range(0, len(ordered), 5_000):  # bounded statements on a large registry
        chunk = ordered[start : start + 5_000]
        session.execute(
            insert(RegistryBlobModel).values(
                [
                    {"user_id": namespace, "digest": digest, "size_bytes": size}
                    for (namespace, digest), size in chunk
                ]
            )
        )
    session.commit()
    return len(rows)
