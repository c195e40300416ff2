"""``/v1/transfers``: move credits between two users atomically."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from credit_service.routers.common import NamespaceDep, SessionDep
from credit_service.services import movements
from gridweave_clients.credit.models import TransferRequest, TransferResponse
from gridweave_runtime.auth import callable_by, require_internal_caller
from gridweave_runtime.responses import mark_replayed

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/transfers", tags=["transfers"], dependencies=[Depends(require_internal_caller)]
)


@router.post("", dependencies=callable_by("admin"))
def transfer(
    body: TransferRequest, namespace: NamespaceDep, session: SessionDep, response: Response
) -> TransferResponse:
    """Move credits from one user to another: both legs or neither."""
    result, replayed = movements.transfer_credits(
        session,
        caller=namespace,
        from_user_id=body.from_user_id,
        to_user_id=body.to_user_id,
        amount=body.amount,
        idempotency_key=body.idempotency_key,
    )
    mark_replayed(response, replayed)
    return result
