"""``/v1/outbox``: the emails kept instead of sent, for the operator (role admin)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from faucet_service.routers.common import SessionDep
from faucet_service.services import outbox
from gridweave_clients.faucet.models import Email, OutboxPageResponse
from gridweave_runtime.auth import callable_by

__all__ = ["router"]

router = APIRouter(prefix="/v1/outbox", tags=["outbox"], dependencies=callable_by("admin"))


@router.get("")
def list_outbox(
    session: SessionDep,
    recipient: Annotated[Email | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> OutboxPageResponse:
    """Outbox messages, newest first (admins only)."""
    return outbox.list_outbox_messages(session, recipient=recipient, limit=limit)
