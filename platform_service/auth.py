"""API-key auth on every route but the public ones: deny by default.

A pure ASGI middleware checks ``Authorization: Bearer gw_live_...`` on every HTTP request
(and refuses every websocket without one) before any route code runs, so a route can
never be left open by forgetting a dependency. The key's row is read on a worker thread
(one indexed lookup); the user it names is put in the request's scope, where
:func:`require_user` finds it. Internal services are never called with the key: the
platform calls them with the internal token and the user's id (``services.downstream``).
"""

from __future__ import annotations

from anyio import to_thread
from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from gridweave_runtime.database import Database
from gridweave_runtime.errors import error_body
from platform_service.errors import AdminOnly, NotAuthenticated
from platform_service.models import Role
from platform_service.services.keys import AuthenticatedUser, authenticate

__all__ = ["PUBLIC_PATHS", "ApiKeyMiddleware", "require_admin", "require_user"]

#: Served without a key: probes, scrapes, the API's documentation, and sign-up; the
#: registry's token endpoint and JWK Set, and the routes the registry calls with the internal
#: token (each checks its own credential: ``routers/registry.py``).
PUBLIC_PATHS = frozenset(
    {
        "/healthz",
        "/metrics",
        "/docs",
        "/openapi.json",
        "/v1/signups",
        "/v1/signups/verify",
        "/v1/registry/token",
        "/v1/registry/jwks",
        "/v1/registry/events",
        "/v1/registry/usage/report",
        "/v1/registry/maintenance",
    }
)
_USER = "gridweave.platform.user"


def _bearer(headers: Headers) -> str | None:
    scheme, _, value = (headers.get("authorization") or "").partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


class ApiKeyMiddleware:
    """401 for any request to a non-public path without a live API key."""

    def __init__(self, app: ASGIApp, *, database: Database, hmac_key: bytes) -> None:
        self.app = app
        self.database = database
        self.hmac_key = hmac_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)  # lifespan, probes, docs, sign-up
            return
        presented = _bearer(Headers(scope=scope))
        user = (
            None if presented is None else await to_thread.run_sync(self._authenticate, presented)
        )
        if user is None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            error = NotAuthenticated()
            response = JSONResponse(
                error_body(error.code, error.message),
                status_code=error.status_code,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        scope[_USER] = user
        await self.app(scope, receive, send)

    def _authenticate(self, presented: str) -> AuthenticatedUser | None:
        with self.database.session() as session:
            return authenticate(session, hmac_key=self.hmac_key, presented=presented)


async def require_user(request: Request) -> AuthenticatedUser:
    """FastAPI dependency: the user whose key the middleware accepted (401 without one)."""
    user = request.scope.get(_USER)
    if not isinstance(user, AuthenticatedUser):
        raise NotAuthenticated()
    return user


async def require_admin(request: Request) -> AuthenticatedUser:
    """FastAPI dependency: the calling user, who must be an admin (403 otherwise)."""
    user = await require_user(request)
    if user.role != Role.ADMIN:
        raise AdminOnly()
    return user
