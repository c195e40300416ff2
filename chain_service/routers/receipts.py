"""``/v1/receipts`` and ``/v1/chain``: append a settlement's receipt, read receipts and proofs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from chain_service.routers.common import SessionDep
from chain_service.services import proofs, receipts
from gridweave_clients.chain.models import (
    ChainPageResponse,
    ReceiptProofResponse,
    ReceiptResponse,
    RecordReceiptRequest,
    RecordReceiptsRequest,
    RecordReceiptsResponse,
    SubjectReceiptsResponse,
)
from gridweave_clients.fields import DatabaseId, PrintableId
from gridweave_runtime.auth import callable_by, require_internal_caller
from gridweave_runtime.responses import mark_replayed

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["receipts"], dependencies=[Depends(require_internal_caller)])


@router.post("/receipts", status_code=201, dependencies=callable_by("metering"))
def record_receipt(
    body: RecordReceiptRequest, session: SessionDep, response: Response
) -> ReceiptResponse:
    """Append a settlement's receipt to the chain (200 and the first one on a replay)."""
    result, replayed = receipts.record_receipt(session, body)
    if replayed:
        response.status_code = 200
    mark_replayed(response, replayed)
    return result


@router.post("/receipts/batch", dependencies=callable_by("metering"))
def record_receipts(body: RecordReceiptsRequest, session: SessionDep) -> RecordReceiptsResponse:
    """Append several settlements' receipts in one transaction, in order (replays answered)."""
    return receipts.record_receipts(session, body)


@router.get("/receipts")
def list_subject_receipts(
    session: SessionDep, subject_id: Annotated[PrintableId, Query()]
) -> SubjectReceiptsResponse:
    """Every receipt of a job or endpoint, with its proof, oldest first."""
    return proofs.list_subject_receipts(session, subject_id=subject_id)


@router.get("/receipts/{seq}")
def get_receipt_proof(
    seq: Annotated[DatabaseId, Path()], session: SessionDep
) -> ReceiptProofResponse:
    """The receipt at ``seq`` with its batch and Merkle path."""
    return proofs.get_receipt_proof(session, seq=seq)


@router.get("/chain")
def list_chain(
    session: SessionDep,
    from_seq: Annotated[DatabaseId, Query()] = 1,
    limit: Annotated[int, Query(ge=1, le=1000)] = 1000,
) -> ChainPageResponse:
    """Consecutive receipts from ``from_seq``, ascending: what a full audit recomputes."""
    return proofs.list_chain(session, from_seq=from_seq, limit=limit)
