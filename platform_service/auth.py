"""API-key (or dashboard session) auth on every route but the public ones: deny by default.

A pure ASGI middleware checks ``Authorization: Bearer gw_live_...`` on every HTTP request
(and refuses every websocket without one) before any route code runs, so a route can
never be left open by forgetting a dependency. Without that header, the dashboard's
session cookie (``gw_session``, ``services.sessions``) stands for the key; a write made
with the cookie (any method but GET, HEAD, OPTIONS) also needs the session's CSRF token in
``X-CSRF-Token``, else 403. A key in the header wins over the cookie. The key's row is read
on a worker thread (one indexed lookup), unless the key was accepted a moment ago
(``services.accepted_keys``); the user it names is put in the request's scope, where
:func:`require_user` finds it. Internal services are never called with the key: the
platform calls them with its service token and the user's id (``services.downstream``).
"""

from __future__ import annotations

from anyio import to_thread
from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from gridweave_clients.platform.sessions import CSRF_HEADER, SESSION_COOKIE
from gridweave_runtime.database import Database
from gridweave_runtime.errors import error_body
from platform_service.errors import AdminOnly, CsrfRejected, NotAuthenticated, PlatformError
from platform_service.models import Role
from platform_service.services.accepted_keys import AcceptedKeys
from platform_service.services.keys import AuthenticatedUser, authenticate, mark_key_used
from platform_service.services.sessions import find_session_user

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
        "/v1/sessions",
        "/v1/sessions/codes",
        "/v1/registry/token",
        "/v1/registry/jwks",
        "/v1/registry/events",
        "/v1/registry/usage/report",
        "/v1/registry/maintenance",
        "/v1/registry/pull-tokens",
    }
)
_USER = "gridweave.platform.user"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _bearer(headers: Headers) -> str | None:
    scheme, _, value = (headers.get("authorization") or "").partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def _cookie(headers: Headers, name: str) -> str | None:
    """The value of cookie ``name`` in the request's ``Cookie`` headers."""
    for header in headers.getlist("cookie"):
        for part in header.split(";"):
            key, _, value = part.strip().partition("=")
            if key == name and value:
                return value
    return None


class ApiKeyMiddleware:
    """401 for any request to a non-public path without a live API key."""

    def __init__(
        self, app: ASGIApp, *, database: Database, hmac_key: bytes, accepted: AcceptedKeys
    ) -> None:
        self.app = app
        self.database = database
        self.hmac_key = hmac_key
        self.accepted = accepted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)  # lifespan, probes, docs, sign-up
            return
        headers = Headers(scope=scope)
        presented = _bearer(headers)
        cookie = None if presented is not None else _cookie(headers, SESSION_COOKIE)
        user: AuthenticatedUser | PlatformError | None = None
        if presented is not None:
            user = self.accepted.get(presented)
            if user is None:
                user = await to_thread.run_sync(self._authenticate, presented)
        elif cookie is not None and scope["type"] == "http":
            write = scope["method"] not in _SAFE_METHODS
            csrf = headers.get(CSRF_HEADER)
            user = await to_thread.run_sync(self._authenticate_session, cookie, write, csrf)
        if not isinstance(user, AuthenticatedUser):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            error = user or NotAuthenticated()
            response = JSONResponse(
                error_body(error.code, error.message),
                status_code=error.status_code,
                headers={"WWW-Authenticate": "Bearer"} if error.status_code == 401 else None,
            )
            await response(scope, receive, send)
            return
        scope[_USER] = user
        await self.app(scope, receive, send)

    def _authenticate(self, presented: str) -> AuthenticatedUser | None:
        with self.database.session() as session:
            user = authenticate(session, hmac_key=self.hmac_key, presented=presented)
            if user is not None and user.key_id is not None:
                mark_key_used(session, key_id=user.key_id)
                self.accepted.put(presented, user)
            return user

    def _authenticate_session(
        self, token: str, write: bool, csrf: str | None
    ) -> AuthenticatedUser | PlatformError | None:
        """The session's user; CsrfRejected for a write without the session's CSRF token."""
        with self.database.session() as session:
            found = find_session_user(session, hmac_key=self.hmac_key, token=token)
            if found is None:
                return None
            if write and not found.csrf_matches(self.hmac_key, csrf):
                return CsrfRejected()
            if found.user.key_id is not None:
                mark_key_used(session, key_id=found.user.key_id)
            return found.user


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
