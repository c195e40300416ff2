"""Dependencies and helpers the routers share."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Response
from sqlalchemy.orm import Session

from credit_service.async_connections import AsyncConnections
from gridweave_runtime.auth import Caller, require_internal_caller
from gridweave_runtime.database import session_dependency

__all__ = [
    "REPLAYED_HEADER",
    "AsyncConnectionsDep",
    "CallerDep",
    "SessionDep",
    "json_answer",
    "mark_replayed",
]

REPLAYED_HEADER = "Idempotent-Replayed"


async def async_connections(request: Request) -> AsyncConnections:
    """FastAPI dependency: the app's event-loop connections (``async``: no thread hop)."""
    connections: AsyncConnections = request.app.state.async_connections
    return connections


SessionDep = Annotated[Session, Depends(session_dependency)]
AsyncConnectionsDep = Annotated[AsyncConnections, Depends(async_connections)]
CallerDep = Annotated[Caller, Depends(require_internal_caller)]


def mark_replayed(response: Response, replayed: bool) -> None:
    """Tell the client whether this answer is a replay of an earlier call with the same key."""
    response.headers[REPLAYED_HEADER] = "true" if replayed else "false"


def json_answer(body: str, replayed: bool) -> Response:
    """An answer that is already JSON text (built and stored by the database): sent as is."""
    return Response(
        body,
        media_type="application/json",
        headers={REPLAYED_HEADER: "true" if replayed else "false"},
    )
