"""``/v1/batches``: seal the waiting receipts now, read a batch."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request

from chain_service.anchorer import wake_anchorer
from chain_service.routers.common import SessionDep, SettingsDep, SigningKeyDep
from chain_service.services import batches
from gridweave_clients.chain.models import BatchResponse, SealResponse
from gridweave_clients.fields import DatabaseId
from gridweave_runtime.auth import callable_by, require_internal_caller

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/batches", tags=["batches"], dependencies=[Depends(require_internal_caller)]
)


@router.post("", dependencies=callable_by("admin"))
def seal_batch(
    request: Request, session: SessionDep, settings: SettingsDep, key: SigningKeyDep
) -> SealResponse:
    """Seal the receipts not in a batch yet (at most the batch maximum) into one now."""
    row = batches.seal_batch(session, key=key, max_receipts=settings.batch_max_receipts)
    if row is not None:
        wake_anchorer(request.app)
    return SealResponse(batch=None if row is None else batches.batch_response(row))


@router.get("/{batch_id}")
def get_batch(batch_id: Annotated[DatabaseId, Path()], session: SessionDep) -> BatchResponse:
    """One sealed batch, with its anchor once anchored."""
    return batches.batch_response(batches.get_batch_row(session, batch_id))
