"""chain_service's wire models: receipts, batches and proofs, shared with every verifier.

A receipt's fields (``ReceiptFields``) are exactly what its hash covers, next to its
position; ``receipt_fields`` turns them into the mapping ``encoding.receipt_hash`` takes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from gridweave_clients.chain.encoding import MAX_SAFE_INTEGER, encode_instant
from gridweave_clients.fields import PrintableId, RequestBody, UserId, UtcDatetime

__all__ = [
    "MAX_RECEIPTS_PER_CALL",
    "AnchorResponse",
    "BatchResponse",
    "ChainPageResponse",
    "HexHash",
    "ReceiptFields",
    "ReceiptProofResponse",
    "ReceiptResponse",
    "RecordReceiptRequest",
    "RecordReceiptsRequest",
    "RecordReceiptsResponse",
    "SealResponse",
    "SubjectReceiptsResponse",
    "receipt_fields",
]

HexHash = Annotated[
    str, Field(pattern=r"^[0-9a-f]{64}$", description="A SHA-256 hash, lowercase hex.")
]
Amount = Annotated[int, Field(strict=True, ge=0, le=MAX_SAFE_INTEGER)]


class ReceiptFields(RequestBody):
    """What one settlement's receipt says; money in micro-credits.

    ``hold_reference`` is the settlement's identity: metering settles each credit hold once,
    so chain_service keeps one receipt per hold reference.
    """

    kind: Literal["job", "endpoint"]
    subject_id: PrintableId = Field(description="The job id, or the endpoint id.")
    hold_reference: PrintableId = Field(description="The credit hold settled (a job's: its id).")
    user_id: UserId
    owner_id: UserId = Field(description="The account billed.")
    node: Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[\x21-\x7e]+$")]
    vendor: Annotated[str, Field(min_length=1, max_length=32, pattern=r"^[a-z0-9_-]+$")]
    gpu_model: (
        Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[\x20-\x7e]+$")] | None
    ) = Field(default=None, description="The GPU model as the node reported it, when known.")
    gpu_count: int = Field(strict=True, ge=1, le=64)
    vram_mb: int = Field(strict=True, ge=1, le=16_777_216, description="VRAM per GPU, MiB.")
    started_at: UtcDatetime | None = None
    finished_at: UtcDatetime
    wall_microseconds: Amount = Field(description="Running time, microseconds.")
    billed_seconds: Amount
    price_per_gpu_second: Amount
    cost: Amount
    charged: Amount = Field(description="What was captured from the hold.")
    settled_at: UtcDatetime
    result_ref_sha256: HexHash | None = Field(
        default=None, description="SHA-256 of the result reference (UTF-8), when there is one."
    )


class RecordReceiptRequest(ReceiptFields):
    """The body metering sends for one completed settlement (replay-safe by hold reference)."""


def receipt_fields(receipt: ReceiptFields) -> dict[str, Any]:
    """The receipt's fields as its hash covers them (instants encoded, ``None`` kept)."""
    return {
        "kind": receipt.kind,
        "subject_id": receipt.subject_id,
        "hold_reference": receipt.hold_reference,
        "user_id": receipt.user_id,
        "owner_id": receipt.owner_id,
        "node": receipt.node,
        "vendor": receipt.vendor,
        "gpu_model": receipt.gpu_model,
        "gpu_count": receipt.gpu_count,
        "vram_mb": receipt.vram_mb,
        "started_at": encode_instant(receipt.started_at),
        "finished_at": encode_instant(receipt.finished_at),
        "wall_microseconds": receipt.wall_microseconds,
        "billed_seconds": receipt.billed_seconds,
        "price_per_gpu_second": receipt.price_per_gpu_second,
        "cost": receipt.cost,
        "charged": receipt.charged,
        "settled_at": encode_instant(receipt.settled_at),
        "result_ref_sha256": receipt.result_ref_sha256,
    }


class ReceiptResponse(ReceiptFields):
    """A receipt in the chain: its fields, its position and its hash."""

    seq: int = Field(description="Position in the chain, from 1.")
    prev_hash: HexHash
    hash: HexHash
    recorded_at: datetime
    batch_id: int | None = Field(description="The batch holding it; None until one is sealed.")


class AnchorResponse(BaseModel):
    """Where a batch was anchored in CometBFT."""

    chain_id: str
    height: int
    tx_hash: str
    proof: dict[str, Any]
    anchored_at: datetime


class BatchResponse(BaseModel):
    """A sealed batch: receipts ``first_seq ..= last_seq`` under one Merkle root, signed."""

    batch_id: int
    first_seq: int
    last_seq: int
    leaf_count: int
    root: HexHash
    last_hash: HexHash = Field(description="The hash of receipt last_seq.")
    signature: str = Field(description="Ed25519 over encoding.batch_message, hex.")
    public_key: str = Field(description="chain_service's Ed25519 public key, raw, hex.")
    created_at: datetime
    anchor: AnchorResponse | None = None


class ReceiptProofResponse(BaseModel):
    """A receipt with what proves it: its batch and its Merkle path (None until batched)."""

    receipt: ReceiptResponse
    batch: BatchResponse | None
    leaf_index: int | None
    merkle_path: list[HexHash]


class ChainPageResponse(BaseModel):
    """Consecutive receipts of the chain, ascending by seq."""

    receipts: list[ReceiptResponse]
    next_seq: int | None


class SubjectReceiptsResponse(BaseModel):
    """Every receipt of one job or endpoint (an endpoint has one per settled period)."""

    subject_id: str
    receipts: list[ReceiptProofResponse]


class SealResponse(BaseModel):
    """The batch just sealed, or None when no receipt was waiting for one."""

    batch: BatchResponse | None


#: The most receipts one ``POST /v1/receipts/batch`` appends.
MAX_RECEIPTS_PER_CALL = 1000


class RecordReceiptsRequest(RequestBody):
    """Several settlements' receipts, appended in one transaction (in this order)."""

    receipts: list[RecordReceiptRequest] = Field(min_length=1, max_length=MAX_RECEIPTS_PER_CALL)


class RecordReceiptsResponse(BaseModel):
    """Each receipt, in the order sent, and whether it was in the chain already."""

    receipts: list[ReceiptResponse]
    replayed: list[bool]
