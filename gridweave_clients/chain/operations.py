"""chain_service's routes as typed operations (sans-IO), each declared once.

Recording a receipt is replayable: chain_service keeps one receipt per hold reference, so
the same receipt sent again returns the first.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, validate_call

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.chain.models import (
    BatchResponse,
    ChainPageResponse,
    ReceiptProofResponse,
    ReceiptResponse,
    RecordReceiptRequest,
    RecordReceiptsRequest,
    RecordReceiptsResponse,
    SealResponse,
    SubjectReceiptsResponse,
)
from gridweave_clients.fields import DatabaseId, PrintableId

__all__ = [
    "get_batch",
    "get_receipt_proof",
    "list_chain",
    "list_subject_receipts",
    "record_receipt",
    "record_receipts",
    "seal_batch",
]

Seq = Annotated[DatabaseId, Field(strict=True)]
PageLimit = Annotated[int, Field(strict=True, ge=1, le=1000)]


@validate_call
def record_receipt(request: RecordReceiptRequest) -> Operation[ReceiptResponse]:
    """Append one settlement's receipt to the chain (replay-safe by hold reference)."""
    return model_operation("POST", "/v1/receipts", ReceiptResponse, body=request, idempotent=True)


@validate_call
def record_receipts(request: RecordReceiptsRequest) -> Operation[RecordReceiptsResponse]:
    """Append several settlements' receipts in one transaction (each replay-safe)."""
    return model_operation(
        "POST", "/v1/receipts/batch", RecordReceiptsResponse, body=request, idempotent=True
    )


@validate_call
def list_subject_receipts(subject_id: PrintableId) -> Operation[SubjectReceiptsResponse]:
    """Every receipt of a job or endpoint, with its proof, oldest first."""
    return model_operation(
        "GET", "/v1/receipts", SubjectReceiptsResponse, params={"subject_id": subject_id}
    )


@validate_call
def get_receipt_proof(seq: Seq) -> Operation[ReceiptProofResponse]:
    """The receipt at ``seq`` with its batch and Merkle path."""
    return model_operation("GET", f"/v1/receipts/{seq}", ReceiptProofResponse)


@validate_call
def list_chain(from_seq: Seq = 1, *, limit: PageLimit = 1000) -> Operation[ChainPageResponse]:
    """Consecutive receipts from ``from_seq``, ascending (to recompute the chain)."""
    return model_operation(
        "GET",
        "/v1/chain",
        ChainPageResponse,
        params={"from_seq": str(from_seq), "limit": str(limit)},
    )


@validate_call
def get_batch(batch_id: Seq) -> Operation[BatchResponse]:
    """One sealed batch."""
    return model_operation("GET", f"/v1/batches/{batch_id}", BatchResponse)


@validate_call
def seal_batch() -> Operation[SealResponse]:
    """Seal the receipts not in a batch yet into one now (``batch`` None: there were none)."""
    return model_operation("POST", "/v1/batches", SealResponse, idempotent=True)
