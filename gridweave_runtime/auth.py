"""Service credentials for service-to-service calls; no database involved.

Every internal route requires a credential of the deployment (``gridweave_runtime.credentials``):
a service's own token, sent as ``Authorization: Bearer <token>`` (``X-Gridweave-Token:
<token>`` is accepted too), looked up by its SHA-256 and never logged. The credential decides
the roles the caller may act as; a call may pick one of them:

- ``X-Gridweave-Role``: the one role the call acts as (``admin``, ``faucet``, ``metering``...);
  one the credential does not have is refused 403. Without it the call may do what any of
  the credential's roles may (the platform, whose credential also acts as ``admin`` for
  signed-in admins, always names the role it calls as);
- ``X-Gridweave-User``: the user the call is made for (set by platform_service), believed
  only once the credential matched.

Deny by default: :func:`install_internal_auth` adds a pure ASGI middleware that checks the
credential on every HTTP request but the public paths (``/healthz``, ``/metrics`` and any the
service names), so a route can never be left open by forgetting a dependency. No token, or an
unknown one: 401 (rendered by the app's own error handler) before any route code runs. Routes
that need the caller's identity take :func:`require_internal_caller`; routes only some roles
may call declare :func:`callable_by` (on a router, so no route of it is forgotten), and are
refused before their input is read.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from gridweave_runtime.credentials import Credentials
from gridweave_runtime.errors import GridweaveError

__all__ = [
    "PUBLIC_PATHS",
    "ROLE_HEADER",
    "TOKEN_HEADER",
    "USER_HEADER",
    "Caller",
    "Forbidden",
    "InternalTokenMiddleware",
    "Unauthorized",
    "authenticate",
    "callable_by",
    "install_internal_auth",
    "require_internal_caller",
    "require_role",
]

TOKEN_HEADER = "X-Gridweave-Token"
USER_HEADER = "X-Gridweave-User"
ROLE_HEADER = "X-Gridweave-Role"
#: Set in the ASGI scope by the middleware once a credential matched: the :class:`Caller`.
_CALLER = "gridweave.caller"
#: Served without the token: health checks and Prometheus scrapes.
PUBLIC_PATHS = frozenset({"/healthz", "/metrics"})


class Unauthorized(GridweaveError):
    """No service token, or an unknown one."""

    code = "unauthorized"
    status_code = 401
    message = "a valid service token is required"


class Forbidden(GridweaveError):
    """The caller's role may not do this."""

    code = "forbidden"
    status_code = 403
    message = "this caller's role may not do this"


@dataclass(frozen=True)
class Caller:
    """Who made an internal call: the user it is for (``X-Gridweave-User``), the role it acts
    as (the declared one, else its credential's own), its credential's service, and the roles
    it may act as on this call (the declared one only, else every one of its credential's)."""

    user_id: str | None
    role: str | None
    service: str | None = None
    roles: tuple[str, ...] = ()

    def acts_as(self, *roles: str) -> bool:
        """Whether this call may act as one of ``roles``."""
        return any(role in roles for role in (self.roles or (self.role,)))


def install_internal_auth(
    app: FastAPI,
    credentials: Credentials,
    *,
    public_paths: Collection[str] = PUBLIC_PATHS,
    prefix_roles: Mapping[str, tuple[str, ...]] | None = None,
) -> None:
    """Require one of ``credentials`` on every HTTP request to ``app`` but those to
    ``public_paths``; under a path prefix of ``prefix_roles``, one acting as one of its roles
    (checked here, not by a dependency: for a hot path, where solving one costs)."""
    app.add_middleware(
        InternalTokenMiddleware,
        owner=app,
        credentials=credentials,
        public_paths=public_paths,
        prefix_roles=prefix_roles or {},
    )


def authenticate(headers: Headers, credentials: Credentials) -> Caller:
    """The caller a request's headers present.

    Raises:
        Unauthorized: no token, or one of no credential of ``credentials``.
        Forbidden: ``X-Gridweave-Role`` names a role the credential does not have.
    """
    presented = _presented_token(headers)
    credential = None if presented is None else credentials.match(presented)
    if credential is None:
        raise Unauthorized()
    declared = (headers.get(ROLE_HEADER) or "").strip().lower() or None
    if declared is not None and declared not in credential.roles:
        raise Forbidden(f"the credential of {credential.name} may not act as {declared}")
    return Caller(
        user_id=headers.get(USER_HEADER) or None,
        role=declared or credential.roles[0],
        service=credential.name,
        roles=(declared,) if declared is not None else credential.roles,
    )


def _presented_token(headers: Headers) -> bytes | None:
    authorization = headers.get("authorization")
    if authorization is not None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip().encode()
    header = headers.get(TOKEN_HEADER)
    return header.encode() if header else None


class InternalTokenMiddleware:
    """401 for any HTTP request (and no websocket) without a known credential, unless public;
    403 for a role its credential does not have.

    Pure ASGI (no per-request dependency solving): the check costs a header lookup and a
    SHA-256. The refusals are rendered by ``owner``'s handlers, so each service answers in
    its own error format.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        owner: FastAPI,
        credentials: Credentials,
        public_paths: Collection[str],
        prefix_roles: Mapping[str, tuple[str, ...]],
    ) -> None:
        self.app = app
        self.owner = owner
        self.credentials = credentials
        self.public_paths = frozenset(public_paths)
        self.prefix_roles = tuple(prefix_roles.items())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)  # lifespan, health checks, scrapes
            return
        try:
            caller = authenticate(Headers(scope=scope), self.credentials)
            for prefix, roles in self.prefix_roles:
                if scope["path"].startswith(prefix):
                    require_role(caller, *roles)
        except (Unauthorized, Forbidden) as refusal:
            if scope["type"] == "websocket":  # closed before it is accepted (HTTP 403)
                await send({"type": "websocket.close", "code": 1008})
            else:
                await self._refuse(refusal, scope, receive, send)
            return
        scope[_CALLER] = caller
        await self.app(scope, receive, send)

    async def _refuse(
        self, error: GridweaveError, scope: Scope, receive: Receive, send: Send
    ) -> None:
        handlers = self.owner.exception_handlers
        handler = next((handlers[k] for k in type(error).__mro__ if k in handlers), None)
        if handler is None:
            response: Any = JSONResponse(
                {"error": {"code": error.code}}, status_code=error.status_code
            )
        else:
            response = handler(Request(scope, receive), error)
            if inspect.isawaitable(response):
                response = await response
        await response(scope, receive, send)


async def require_internal_caller(request: Request) -> Caller:
    """FastAPI dependency: the caller of a request the credential middleware let through.

    401 if the request did not pass :class:`InternalTokenMiddleware` (an app without
    :func:`install_internal_auth` refuses everyone). ``async`` although it never awaits:
    FastAPI runs a sync dependency in its threadpool.
    """
    caller: Caller | None = request.scope.get(_CALLER)
    if caller is None:
        raise Unauthorized()
    return caller


def require_role(caller: Caller, *roles: str) -> None:
    """Raise :class:`Forbidden` unless the (already authenticated) caller has one of ``roles``."""
    if not caller.acts_as(*roles):
        raise Forbidden(
            f"requires the role {' or '.join(roles)}; this caller acts as {caller.role}"
        )


def callable_by(*roles: str) -> list[Any]:
    """A route's or router's ``dependencies=``: only callers acting as one of ``roles``
    (403 for the others, before the route's input is read)."""

    async def caller_in_roles(request: Request) -> None:
        require_role(await require_internal_caller(request), *roles)

    return [Depends(caller_in_roles)]
