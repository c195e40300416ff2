"""Dependencies the routers share (the replay header's helpers are gridweave_runtime's)."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gridweave_runtime.async_connections import AsyncConnections
from gridweave_runtime.auth import ROLE_HEADER, Caller, require_internal_caller
from gridweave_runtime.database import session_dependency
from gridweave_runtime.errors import InvalidRequest

__all__ = ["AsyncConnectionsDep", "CallerDep", "NamespaceDep", "SessionDep"]

# a role fits operations.caller (VARCHAR(64)) and reads as a service's name
_ROLE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


async def async_connections(request: Request) -> AsyncConnections:
    """FastAPI dependency: the app's event-loop connections (``async``: no thread hop)."""
    connections: AsyncConnections = request.app.state.async_connections
    return connections


async def idempotency_namespace(
    caller: Annotated[Caller, Depends(require_internal_caller)],
) -> str:
    """FastAPI dependency: the calling service's namespace of keys, its role (``''``: none)."""
    if caller.role is None:
        return ""
    if _ROLE.fullmatch(caller.role) is None:
        raise InvalidRequest(ROLE_HEADER, "must be a service's role: a-z, 0-9, '.', '_', '-'")
    return caller.role


SessionDep = Annotated[Session, Depends(session_dependency)]
AsyncConnectionsDep = Annotated[AsyncConnections, Depends(async_connections)]
CallerDep = Annotated[Caller, Depends(require_internal_caller)]
NamespaceDep = Annotated[str, Depends(idempotency_namespace)]
