"""A job's image: the user's reference checked against its rights and pinned to a digest.

A submission naming ``image=`` is checked before any credit is held:

1. the reference parses (``<namespace>/<name>[:tag]`` or ``...@sha256:<hex>``, no host);
2. the user may pull the repository, by the registry's own rules
   (:func:`platform_service.services.registry.grant_access`: its own namespace, one shared
   with it, the public ``gridweave/``; admins any), else 403 ``image_refused`` naming it;
3. the registry has it: a ``HEAD`` of its manifest with a pull token of the user's answers
   the digest, else 404 ``image_not_found`` naming it (an unreachable registry is 503).

The job then carries ``<repository>@<digest>``, and the node pulls exactly that. Its pull
token is asked again when an attempt starts (:func:`issue_pull_token`, an internal route
the gateway calls), so a share withdrawn meanwhile stops the pull, and the node pulls with
the owner's rights, never its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from anyio import to_thread
from sqlalchemy.orm import Session

from gridweave_clients.images import ImageReference, parse_image
from gridweave_clients.platform.registry import PullTokenResponse
from gridweave_runtime.database import Database
from gridweave_runtime.errors import InvalidRequest
from platform_service.errors import (
    DownstreamUnavailable,
    ImageNotFound,
    ImageRefused,
    RegistryRefusal,
)
from platform_service.services.keys import AuthenticatedUser
from platform_service.services.registry import Scope, grant_access
from platform_service.services.registry_tokens import TokenSigner
from platform_service.services.users import get_user

__all__ = ["ImageRegistry", "issue_pull_token", "resolve_image"]

#: The manifest kinds a node can run: OCI and Docker images, and indexes of them.
MANIFEST_TYPES = ", ".join(
    (
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    )
)


@dataclass(frozen=True)
class ImageRegistry:
    """What resolving an image takes: the registry's API, the token signer, the rules'
    settings, the database (shares and roles) and an HTTP client."""

    url: str
    signer: TokenSigner
    database: Database
    http: httpx.AsyncClient
    public_namespace: str
    default_quota: int


def _pull_access(
    registry: ImageRegistry, session: Session, user: AuthenticatedUser, repository: str
) -> list[dict[str, Any]]:
    """The ``access`` claim of a pull of ``repository`` by ``user``; ``ImageRefused`` else."""
    scope = Scope(type="repository", name=repository, actions=frozenset({"pull"}))
    try:
        return grant_access(
            session,
            user=user,
            scopes=[scope],
            default_quota=registry.default_quota,
            read_only=False,
            public_namespace=registry.public_namespace,
        )
    except RegistryRefusal as refusal:  # another user's repository, not shared with it
        raise ImageRefused(repository) from refusal


def _access_of(registry: ImageRegistry, user: AuthenticatedUser, repository: str) -> Any:
    with registry.database.session() as session:
        return _pull_access(registry, session, user, repository)


async def resolve_image(registry: ImageRegistry, *, user: AuthenticatedUser, image: str) -> str:
    """``image`` pinned to its manifest's digest, once the user may pull it and it exists.

    Raises:
        InvalidRequest: not a reference of the platform's registry (the SDK checks first).
        ImageRefused: another user's repository that is not shared with ``user``.
        ImageNotFound: no such repository, tag or digest.
        DownstreamUnavailable: the registry did not answer.
    """
    try:
        reference = parse_image(image)
    except ValueError as bad:
        raise InvalidRequest("image", str(bad)) from None
    access = await to_thread.run_sync(_access_of, registry, user, reference.repository)
    token, _, _ = registry.signer.sign(subject=user.user_id, access=access)
    digest = await _manifest_digest(registry, reference, token)
    return reference.pinned(digest)


async def _manifest_digest(registry: ImageRegistry, reference: ImageReference, token: str) -> str:
    url = f"{registry.url.rstrip('/')}/v2/{reference.repository}/manifests/{reference.reference}"
    headers = {"Authorization": f"Bearer {token}", "Accept": MANIFEST_TYPES}
    try:
        answer = await registry.http.head(url, headers=headers)
    except httpx.HTTPError as error:
        raise DownstreamUnavailable(
            "the image registry is unavailable: try again", service="registry"
        ) from error
    if answer.status_code == 404:
        raise ImageNotFound(str(reference))
    digest = str(answer.headers.get("docker-content-digest", ""))
    if answer.status_code != 200 or not digest.startswith("sha256:"):
        raise DownstreamUnavailable(
            f"the image registry answered {answer.status_code} for {reference}: try again",
            service="registry",
        )
    if reference.digest is not None and digest != reference.digest:
        raise ImageNotFound(str(reference))
    return digest


def issue_pull_token(
    registry: ImageRegistry, session: Session, *, user_id: str, repository: str
) -> PullTokenResponse:
    """A token for ``user_id`` to pull ``repository`` (a node pulling a job's image), by
    the same rules as the user's own pulls; ``ImageRefused`` when it may not."""
    user = get_user(session, user_id)
    caller = AuthenticatedUser(user_id=user.id, role=user.role, key_id=None)
    access = _pull_access(registry, session, caller, repository)
    token, _, lifetime = registry.signer.sign(subject=user_id, access=access)
    return PullTokenResponse(token=token, expires_in=lifetime)
