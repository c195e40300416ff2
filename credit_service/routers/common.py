"""Dependencies the routers share (the replay header's helpers are gridweave_runtime's)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from credit_service.async_connections import AsyncConnections
from gridweave_runtime.auth import Caller, require_internal_caller
from gridweave_runtime.database import session_dependency

__all__ = ["AsyncConnectionsDep", "CallerDep", "SessionDep"]


async def async_connections(request: Request) -> AsyncConnections:
    """FastAPI dependency: the app's event-loop connections (``async``: no thread hop)."""
    connections: AsyncConnections = request.app.state.async_connections
    return connections


SessionDep = Annotated[Session, Depends(session_dependency)]
AsyncConnectionsDep = Annotated[AsyncConnections, Depends(async_connections)]
CallerDep = Annotated[Caller, Depends(require_internal_caller)]
