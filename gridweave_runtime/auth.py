"""Internal-token auth for service-to-service calls; no database involved.

Every internal route requires the deployment's shared secret, ``GRIDWEAVE_INTERNAL_TOKEN``,
sent as ``Authorization: Bearer <token>`` (``X-Gridweave-Token: <token>`` is accepted too).
It is compared in constant time and never logged. Only once the token matches are the
identity headers believed:

- ``X-Gridweave-User``: the user the call is made for (set by platform_service);
- ``X-Gridweave-Role``: the caller's role (``admin``, ``faucet``, ``metering``, ``platform``...).

No token, or a wrong one: 401 before any route code runs.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from fastapi import FastAPI, Request

from gridweave_runtime.errors import GridweaveError

__all__ = [
    "ROLE_HEADER",
    "TOKEN_HEADER",
    "USER_HEADER",
    "Caller",
    "Forbidden",
    "Unauthorized",
    "install_internal_auth",
    "require_internal_caller",
    "require_role",
]

TOKEN_HEADER = "X-Gridweave-Token"
USER_HEADER = "X-Gridweave-User"
ROLE_HEADER = "X-Gridweave-Role"
_STATE_KEY = "gridweave_internal_token"


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


def install_internal_auth(app: FastAPI, token: str) -> None:
    """Make ``token`` the secret :func:`require_internal_caller` checks for this app."""
    if not token:
        raise ValueError("the internal token must not be empty")
    setattr(app.state, _STATE_KEY, token.encode())


def _presented_token(request: Request) -> bytes | None:
    authorization = request.headers.get("authorization")
    if authorization is not None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip().encode()
    header = request.headers.get(TOKEN_HEADER)
    return header.encode() if header else None


async def require_internal_caller(request: Request) -> Caller:
    """FastAPI dependency: 401 unless the internal token matches; returns the trusted caller.

    ``async`` although it never awaits: FastAPI runs a sync dependency in its threadpool, and
    that hop would cost more than the check itself on every internal call.
    """
    expected: bytes | None = getattr(request.app.state, _STATE_KEY, None)
    presented = _presented_token(request)
    if expected is None or presented is None or not hmac.compare_digest(presented, expected):
        raise Unauthorized()
    return Caller(
        user_id=request.headers.get(USER_HEADER) or None,
        role=(request.headers.get(ROLE_HEADER) or "").strip().lower() or None,
    )


def require_role(caller: Caller, *roles: str) -> None:
    """Raise :class:`Forbidden` unless the (already authenticated) caller has one of ``roles``."""
    if caller.role not in roles:
        raise Forbidden(f"requires role {' or '.join(roles)} in {ROLE_HEADER}")
