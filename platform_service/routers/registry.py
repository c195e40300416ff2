"""The image registry's routes on the platform.

- ``GET /v1/registry/token``: the registry's token endpoint (Docker's token authentication),
  HTTP Basic with any user name and the user's API key as the password;
- ``GET /v1/registry/jwks``: the public key the registry verifies tokens with;
- ``GET /v1/registry/usage``: the caller's usage and quota;
- ``GET|POST|DELETE /v1/registry/shares``: repositories shared with other users (pull);
- ``GET|PUT /v1/admin/users/{user_id}/registry-quota``: a user's quota (admins);
- ``POST /v1/registry/events``, ``PUT /v1/registry/usage``, ``PUT /v1/registry/maintenance``:
  the registry's notifications, reconciliation and read-only window, with its credential;
- ``POST /v1/registry/pull-tokens``: the gateway's pull of a job's image with its owner's
  rights, with its credential (``gridweave_runtime.credentials``).

The first two and the internal ones are in ``auth.PUBLIC_PATHS`` (no API key): each checks
its own credential here.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse

from gridweave_clients.platform.registry import (
    REPOSITORY_PATTERN,
    PullTokenRequest,
    PullTokenResponse,
    RegistryEventsRequest,
    RegistryMaintenanceRequest,
    RegistryShareListResponse,
    RegistryShareResponse,
    RegistryUsageListResponse,
    RegistryUsageReport,
    RegistryUsageResponse,
    SetRegistryQuotaRequest,
    ShareRepositoryRequest,
)
from gridweave_runtime.auth import Unauthorized, require_role
from gridweave_runtime.auth import authenticate as authenticate_service
from gridweave_runtime.errors import InvalidRequest, error_body
from platform_service.errors import NotAuthenticated, RegistryRefusal
from platform_service.routers.common import (
    AdminDep,
    HmacKeyDep,
    SessionDep,
    SettingsDep,
    UserDep,
)
from platform_service.services import registry, registry_shares
from platform_service.services.images import ImageRegistry, issue_pull_token
from platform_service.services.keys import authenticate
from platform_service.services.registry_tokens import TokenSigner
from platform_service.settings import PlatformSettings

__all__ = ["router"]

router = APIRouter(tags=["registry"])


async def _signer(request: Request) -> TokenSigner:
    signer: TokenSigner = request.app.state.registry_signer
    return signer


async def _maintenance(request: Request) -> registry.MaintenanceWindow:
    window: registry.MaintenanceWindow = request.app.state.registry_maintenance
    return window


def _service_caller(*roles: str) -> Callable[[Request], Awaitable[None]]:
    """A dependency: 401 without a service credential, 403 unless it acts as one of ``roles``."""

    async def check(request: Request) -> None:
        try:
            caller = authenticate_service(request.headers, request.app.state.credentials)
        except Unauthorized:
            raise NotAuthenticated("this route takes a service credential") from None
        require_role(caller, *roles)

    return check


UserIdPath = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._-]+$")]
SignerDep = Annotated[TokenSigner, Depends(_signer)]
MaintenanceDep = Annotated[registry.MaintenanceWindow, Depends(_maintenance)]
#: The registry's own calls: its notifications, usage and read-only window.
RegistryServiceDep = Annotated[None, Depends(_service_caller("registry"))]
#: The gateway's pulls of a job's image with its owner's rights.
GatewayServiceDep = Annotated[None, Depends(_service_caller("gateway"))]


def _default_quota(settings: PlatformSettings) -> int:
    return int(settings.registry_quota_gb * 10**9)


def _refusal(error: RegistryRefusal | NotAuthenticated, **headers: str) -> JSONResponse:
    """Gridweave's error body plus the ``errors`` list Docker's clients print."""
    registry_code = error.registry_code if isinstance(error, RegistryRefusal) else "UNAUTHORIZED"
    body = error_body(error.code, error.message, **error.details)
    body["errors"] = [{"code": registry_code, "message": error.message}]
    return JSONResponse(body, status_code=error.status_code, headers=headers or None)


def _basic_password(request: Request) -> str | None:
    scheme, _, value = (request.headers.get("authorization") or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    _, colon, password = decoded.partition(":")
    return password if colon else None


@router.get("/v1/registry/token", response_model=None)
def get_registry_token(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    hmac_key: HmacKeyDep,
    signer: SignerDep,
    maintenance: MaintenanceDep,
    service: Annotated[str, Query(min_length=1, max_length=200)],
    scope: Annotated[list[str] | None, Query(max_length=50)] = None,
) -> JSONResponse | dict[str, object]:
    """A registry token for the user whose API key is the Basic password (or, without
    credentials, pull in the public namespace)."""
    if service != settings.registry_service:
        raise InvalidRequest("service", f"this platform issues tokens for {signer.service!r}")
    scopes = registry.parse_scopes(scope or [])
    password = _basic_password(request)
    user = (
        None if password is None else authenticate(session, hmac_key=hmac_key, presented=password)
    )
    public = settings.registry_public_namespace
    anonymous = (
        None if password is not None else registry.anonymous_access(scopes, public_namespace=public)
    )
    if user is None and anonymous is None:
        error = NotAuthenticated("the registry takes your API key as the password (Basic auth)")
        return _refusal(error, **{"WWW-Authenticate": 'Basic realm="Gridweave registry"'})
    if user is None:
        assert anonymous is not None
        token, issued_at, lifetime = signer.sign(subject="anonymous", access=anonymous)
        return _token_body(token, issued_at, lifetime)
    try:
        access = registry.grant_access(
            session,
            user=user,
            scopes=scopes,
            default_quota=_default_quota(settings),
            read_only=maintenance.read_only,
            public_namespace=public,
        )
    except RegistryRefusal as error:
        return _refusal(error)
    token, issued_at, lifetime = signer.sign(subject=user.user_id, access=access)
    maintenance.writes_granted(access, lifetime)
    return _token_body(token, issued_at, lifetime)


def _token_body(token: str, issued_at: int, lifetime: int) -> dict[str, object]:
    return {
        "token": token,
        "access_token": token,
        "expires_in": lifetime,
        "issued_at": _rfc3339(issued_at),
    }


def _rfc3339(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


@router.get("/v1/registry/jwks")
def get_registry_jwks(signer: SignerDep) -> dict[str, list[dict[str, str]]]:
    """The JWK Set of the key registry tokens are signed with."""
    return signer.jwks()


@router.get("/v1/registry/usage")
def get_my_registry_usage(
    user: UserDep, session: SessionDep, settings: SettingsDep
) -> RegistryUsageResponse:
    """What the caller's images take in the registry, and its quota."""
    return registry.get_registry_usage(
        session, user_id=user.user_id, default_quota=_default_quota(settings)
    )


@router.get("/v1/registry/shares")
def list_registry_shares(user: UserDep, session: SessionDep) -> RegistryShareListResponse:
    """The caller's repositories shared with others, and others' shared with the caller."""
    return registry_shares.list_shares(session, user_id=user.user_id)


@router.post("/v1/registry/shares")
def share_registry_repository(
    body: ShareRepositoryRequest, user: UserDep, session: SessionDep
) -> RegistryShareResponse:
    """Let another user pull one of the caller's repositories (again: answered as it is)."""
    return registry_shares.share_repository(
        session, caller=user, repository=body.repository, user_id=body.user_id
    )


@router.delete("/v1/registry/shares")
def unshare_registry_repository(
    user: UserDep,
    session: SessionDep,
    repository: Annotated[str, Query(min_length=3, max_length=255, pattern=REPOSITORY_PATTERN)],
    user_id: Annotated[str, Query(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._-]+$")],
) -> RegistryShareResponse:
    """Stop sharing a repository with a user (404 when it was not shared)."""
    return registry_shares.unshare_repository(
        session, caller=user, repository=repository, user_id=user_id
    )


@router.get("/v1/admin/registry-quotas")
def list_registry_quotas(
    _admin: AdminDep,
    session: SessionDep,
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> RegistryUsageListResponse:
    """Every user's registry usage and quota, most used first, with the number of users
    (admins only)."""
    return registry.list_registry_usage(
        session, limit=limit, offset=offset, default_quota=_default_quota(settings)
    )


@router.get("/v1/admin/users/{user_id}/registry-quota")
def get_registry_quota(
    user_id: UserIdPath, _admin: AdminDep, session: SessionDep, settings: SettingsDep
) -> RegistryUsageResponse:
    """A user's registry usage and quota (admins only)."""
    return registry.get_registry_usage(
        session, user_id=user_id, default_quota=_default_quota(settings)
    )


@router.put("/v1/admin/users/{user_id}/registry-quota")
def set_registry_quota(
    user_id: UserIdPath,
    body: SetRegistryQuotaRequest,
    _admin: AdminDep,
    session: SessionDep,
    settings: SettingsDep,
) -> RegistryUsageResponse:
    """Set a user's registry quota, in force from its next push (admins only)."""
    return registry.set_registry_quota(
        session,
        user_id=user_id,
        quota_bytes=body.quota_bytes,
        default_quota=_default_quota(settings),
    )


@router.post("/v1/registry/pull-tokens")
def post_pull_token(
    body: PullTokenRequest, request: Request, _gateway: GatewayServiceDep, session: SessionDep
) -> PullTokenResponse:
    """A token for a node to pull a job's image as the job's owner may (the gateway's
    credential; 403 ``image_refused`` when the owner may not, 404 when there is no such user)."""
    images: ImageRegistry = request.app.state.jobs.images
    return issue_pull_token(images, session, user_id=body.user_id, repository=body.repository)


@router.post("/v1/registry/events")
def post_registry_events(
    body: RegistryEventsRequest, _registry: RegistryServiceDep, session: SessionDep
) -> dict[str, int]:
    """The registry's notifications: pushed blobs counted per namespace (its credential)."""
    return {"counted": registry.record_registry_events(session, body.events)}


@router.put("/v1/registry/usage/report")
def put_registry_usage(
    body: RegistryUsageReport, _registry: RegistryServiceDep, session: SessionDep
) -> dict[str, int]:
    """Replace the counted usage with the registry's storage (the registry's credential)."""
    return {"blobs": registry.replace_registry_usage(session, body)}


@router.put("/v1/registry/maintenance")
def put_registry_maintenance(
    body: RegistryMaintenanceRequest, _registry: RegistryServiceDep, maintenance: MaintenanceDep
) -> dict[str, bool | int]:
    """The registry enters or leaves read-only for a collection (the registry's credential).

    From now on no token lets a client write; ``writes_expire_in``: the seconds until the
    last one granted before has expired, which the registry waits before it goes read-only,
    so that no push under way is cut off.
    """
    maintenance.set(read_only=body.read_only, seconds=body.seconds)
    return {"read_only": maintenance.read_only, "writes_expire_in": maintenance.writes_expire_in}
