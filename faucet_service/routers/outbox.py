"""``/v1/outbox``: the emails kept instead of sent, for the operator (role admin)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from faucet_service.routers.common import CallerDep, SessionDep
from faucet_service.services import outbox
from gridweave_clients.faucet.models import Email, OutboxPageResponse
from gridweave_runtime.auth import require_role

__all__ = ["router"]

router = APIRouter(prefix="/v1/outbox", tags=["outbox"])


@router.get("")
def list_outbox(
    caller: CallerDep,
    session: SessionDep,
    recipient: Annotated[Email | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> OutboxPageResponse:
    """Outbox messages, newest first (X-Gridweave-Role admin)."""
    require_role(caller, "admin")
    return outbox.list_outbox_messages(session, recipient=recipient, limit=limit)
