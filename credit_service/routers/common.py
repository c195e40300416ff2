"""Dependencies the routers share (the replay header's helpers are gridweave_runtime's)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gridweave_runtime.async_connections import AsyncConnections
from gridweave_runtime.auth import Caller, require_internal_caller
from gridweave_runtime.database import session_dependency

__all__ = ["AsyncConnectionsDep", "CallerDep", "NamespaceDep", "SessionDep"]


async def async_connections(request: Request) -> AsyncConnections:
    """FastAPI dependency: the app's event-loop connections (``async``: no thread hop)."""
    connections: AsyncConnections = request.app.state.async_connections
    return connections


async def idempotency_namespace(
    caller: Annotated[Caller, Depends(require_internal_caller)],
) -> str:
    """FastAPI dependency: the calling service's namespace of keys, the role it acts as (one
    its credential has: the credentials document allows only well-formed roles that fit
    ``operations.caller``)."""
    return caller.role or ""


SessionDep = Annotated[Session, Depends(session_dependency)]
AsyncConnectionsDep = Annotated[AsyncConnections, Depends(async_connections)]
CallerDep = Annotated[Caller, Depends(require_internal_caller)]
NamespaceDep = Annotated[str, Depends(idempotency_namespace)]
