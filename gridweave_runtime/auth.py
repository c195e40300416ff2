"""Internal-token auth for service-to-service calls; no database involved.

Every internal route requires the deployment's shared secret, ``GRIDWEAVE_INTERNAL_TOKEN``,
sent as ``Authorization: Bearer <token>`` (``X-Gridweave-Token: <token>`` is accepted too).
It is compared in constant time and never logged. Only once the token matches are the
identity headers believed:

- ``X-Gridweave-User``: the user the call is made for (set by platform_service);
- ``X-Gridweave-Role``: the caller's role (``admin``, ``faucet``, ``metering``, ``platform``...).

Deny by default: :func:`install_internal_auth` adds a pure ASGI middleware that checks the
token on every HTTP request but the public paths (``/healthz``, ``/metrics`` and any the
service names), so a route can never be left open by forgetting a dependency. No token, or a
wrong one: 401 (rendered by the app's own error handler) before any route code runs. Routes
that need the caller's identity take :func:`require_internal_caller`.
"""

from __future__ import annotations

import hmac
import inspect
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

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
    "install_internal_auth",
    "require_internal_caller",
    "require_role",
]

TOKEN_HEADER = "X-Gridweave-Token"
USER_HEADER = "X-Gridweave-User"
ROLE_HEADER = "X-Gridweave-Role"
#: Set in the ASGI scope by the middleware once the token matched.
_AUTHENTICATED = "gridweave.authenticated"
#: Served without the token: health checks and Prometheus scrapes.
PUBLIC_PATHS = frozenset({"/healthz", "/metrics"})


class Unauthorized(GridweaveError):
    """No internal token, or a wrong one."""

    code = "unauthorized"
    status_code = 401
    message = "a valid internal service token is required"


class Forbidden(GridweaveError):
    """The caller's role may not do this."""

    code = "forbidden"
    status_code = 403
    message = "this caller's role may not do this"


@dataclass(frozen=True)
class Caller:
    """Who made an internal call, as the identity headers said (trusted: the token matched)."""

    user_id: str | None
    role: str | None


def install_internal_auth(
    app: FastAPI, token: str, *, public_paths: Collection[str] = PUBLIC_PATHS
) -> None:
    """Require ``token`` on every HTTP request to ``app`` but those to ``public_paths``."""
    if not token:
        raise ValueError("the internal token must not be empty")
    app.add_middleware(
        InternalTokenMiddleware, owner=app, token=token.encode(), public_paths=public_paths
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
    """401 for any HTTP request (and no websocket) without the internal token, unless public.

    Pure ASGI (no per-request dependency solving): the check costs a header lookup and a
    constant-time comparison. The 401 is rendered by ``owner``'s handler for
    :class:`Unauthorized`, so each service answers in its own error format.
    """

    def __init__(
        self, app: ASGIApp, *, owner: FastAPI, token: bytes, public_paths: Collection[str]
    ) -> None:
        self.app = app
        self.owner = owner
        self.token = token
        self.public_paths = frozenset(public_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)  # lifespan, health checks, scrapes
            return
        presented = _presented_token(Headers(scope=scope))
        if presented is None or not hmac.compare_digest(presented, self.token):
            if scope["type"] == "websocket":  # closed before it is accepted (HTTP 403)
                await send({"type": "websocket.close", "code": 1008})
            else:
                await self._refuse(scope, receive, send)
            return
        scope[_AUTHENTICATED] = True
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = Unauthorized()
        handlers = self.owner.exception_handlers
        handler = next((handlers[k] for k in type(error).__mro__ if k in handlers), None)
        if handler is None:
            response: Any = JSONResponse({"error": {"code": error.code}}, status_code=401)
        else:
            response = handler(Request(scope, receive), error)
            if inspect.isawaitable(response):
                response = await response
        await response(scope, receive, send)


async def require_internal_caller(request: Request) -> Caller:
    """FastAPI dependency: the trusted caller of a request the token middleware let through.

    401 if the request did not pass :class:`InternalTokenMiddleware` (an app without
    :func:`install_internal_auth` refuses everyone). ``async`` although it never awaits:
    FastAPI runs a sync dependency in its threadpool.
    """
    if not request.scope.get(_AUTHENTICATED):
        raise Unauthorized()
    return Caller(
        user_id=request.headers.get(USER_HEADER) or None,
        role=(request.headers.get(ROLE_HEADER) or "").strip().lower() or None,
    )


def require_role(caller: Caller, *roles: str) -> None:
    """Raise :class:`Forbidden` unless the (already authenticated) caller has one of ``roles``."""
    if caller.role not in roles:
        raise Forbidden(f"requires role {' or '.join(roles)} in {ROLE_HEADER}")
