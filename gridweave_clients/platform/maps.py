"""The platform's map routes: their wire models and typed operations (sans-IO).

A map runs one function over many inputs on ``workers`` GPU allocations at once
(``POST /v1/maps``): the SDK pickles the function once and the inputs in chunks (each a
pickled list of ``(args, kwargs)``), opaque to the platform. ``GET /v1/maps/{id}`` answers
its progress; ``GET /v1/maps/{id}/chunks/{n}`` a finished chunk's record (every input's
status and pickled value, read by the SDK) with its SHA-256, which the client checks
before anyone reads a value; ``POST /v1/maps/{id}/cancel`` stops its workers (the chunks
already stored stay readable).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated
from urllib.parse import quote

from pydantic import Base64Bytes, BaseModel, Field, validate_call

from gridweave_clients._core import Answer, Call, Operation, model_operation
from gridweave_clients.credit.models import IdempotencyKey
from gridweave_clients.fields import RequestBody
from gridweave_clients.gateway.models import (
    CpuMillis,
    FunctionName,
    GpuCount,
    MaxRetries,
    MemoryMb,
    TimeoutSeconds,
    Vendor,
    VramMb,
)
from gridweave_clients.images import ImageName
from gridweave_clients.maps import MapId, StoredChunk, checked_records
from gridweave_clients.pip import PipRequirements
from gridweave_clients.platform.models import IDEMPOTENCY_HEADER
from gridweave_clients.platform.results import checked_result
from gridweave_controller.operations import DEFAULT_TIMEOUT_SECONDS
from gridweave_controller.phases import JobPhase
from gridweave_controller.validation import (
    MAX_CHUNK_ITEMS,
    MAX_MAP_ITEMS,
    MAX_MAP_RETRIES,
    MAX_MAP_WORKERS,
)

__all__ = [
    "MAX_MAPS_PAGE",
    "NEXT_CHUNK_HEADER",
    "MapPhase",
    "MapRecords",
    "MapListResponse",
    "MapResponse",
    "MapWorkerResponse",
    "SubmitMapRequest",
    "cancel_map",
    "get_map",
    "get_map_chunk",
    "get_map_records",
    "list_maps",
    "submit_map",
]

#: The most maps one page holds (each is read with all of its workers).
MAX_MAPS_PAGE = 100
#: The first chunk a records answer leaves out.
NEXT_CHUNK_HEADER = "X-Gridweave-Next-Chunk"
MapPhase = Annotated[
    str,
    Field(
        description=(
            "Pending (no worker runs yet), Running, Completed (every worker finished its "
            "share; inputs may have failed: see failed), Failed (a worker failed), Cancelled."
        )
    ),
]
Chunk = Annotated[int, Field(strict=True, ge=0, lt=MAX_MAP_ITEMS)]
Workers = Annotated[int, Field(strict=True, ge=1, le=MAX_MAP_WORKERS)]


class SubmitMapRequest(RequestBody):
    """One function over ``items`` inputs in ``len(chunks)`` chunks of ``chunk_items``,
    on at most ``concurrency`` workers, each one allocation of ``gpu_count`` GPUs."""

    function: Base64Bytes = Field(description="base64 of the pickled function (cloudpickle).")
    chunks: list[Base64Bytes] = Field(
        min_length=1,
        max_length=MAX_MAP_ITEMS,
        description="base64 of each chunk: a pickled list of (args, kwargs), in order.",
    )
    items: int = Field(strict=True, ge=1, le=MAX_MAP_ITEMS)
    chunk_items: int = Field(strict=True, ge=1, le=MAX_CHUNK_ITEMS)
    concurrency: Workers = 16
    retries: int = Field(
        default=0,
        strict=True,
        ge=0,
        le=MAX_MAP_RETRIES,
        description="How often an input that raised is tried again.",
    )
    vram_mb: VramMb
    gpu_count: GpuCount = 1
    vendor: Vendor = "any"
    timeout_seconds: TimeoutSeconds = Field(
        default=DEFAULT_TIMEOUT_SECONDS,
        description="The longest each worker may run its share; each worker's hold is sized by it.",
    )
    max_retries: MaxRetries = Field(
        default=2, description="How often a worker whose node was lost runs its share again."
    )
    memory_mb: MemoryMb | None = None
    cpu_millis: CpuMillis | None = None
    image: ImageName | None = None
    pip: PipRequirements | None = None
    function_name: FunctionName | None = None


class MapWorkerResponse(BaseModel):
    """One worker of a map: its job, where it runs, how far it is."""

    job_id: str
    phase: JobPhase
    node: str | None
    gpu_indices: list[int] = Field(
        default_factory=list, description="The GPUs of its node it holds (none until placed)."
    )
    done: int
    failed: int
    attempts: int
    reason: str | None
    message: str | None


class MapResponse(BaseModel):
    """A map: its inputs, how many are done and failed, and its workers."""

    map_id: str
    function_name: str | None
    phase: MapPhase
    finished: bool
    items: int
    chunks: int
    chunk_items: int
    done: int
    failed: int
    workers: list[MapWorkerResponse]
    created_at: datetime | None
    hold_amount: int | None = Field(
        default=None, description="Micro-credits held in all (each worker's hold), at submission."
    )

    @property
    def progress(self) -> str:
        """``done/items`` and the failed inputs, if any: ``"40/100"``, ``"40/100 (2 failed)"``."""
        failed = f" ({self.failed} failed)" if self.failed else ""
        return f"{self.done}/{self.items}{failed}"


class MapListResponse(BaseModel):
    """One page of the caller's maps, newest first, with the count of all of them and the
    next page's cursor (None: the last)."""

    maps: list[MapResponse]
    total: int
    next_cursor: str | None = None


@validate_call
def submit_map(
    function: bytes,
    chunks: list[bytes],
    *,
    items: Annotated[int, Field(strict=True, ge=1)],
    chunk_items: Annotated[int, Field(strict=True, ge=1)],
    vram_mb: VramMb,
    concurrency: Workers = 16,
    retries: Annotated[int, Field(strict=True, ge=0)] = 0,
    gpu_count: GpuCount = 1,
    vendor: Vendor = "any",
    timeout_seconds: TimeoutSeconds = DEFAULT_TIMEOUT_SECONDS,
    memory_mb: MemoryMb | None = None,
    cpu_millis: CpuMillis | None = None,
    image: ImageName | None = None,
    pip: PipRequirements | None = None,
    function_name: FunctionName | None = None,
    idempotency_key: IdempotencyKey | None = None,
) -> Operation[MapResponse]:
    """Run ``function`` over the inputs in ``chunks`` (402 when the workers' holds are not
    covered, 422, 413 past the submission limit)."""
    body = SubmitMapRequest(
        function=base64.b64encode(function),
        chunks=[base64.b64encode(chunk) for chunk in chunks],
        items=items,
        chunk_items=chunk_items,
        concurrency=concurrency,
        retries=retries,
        vram_mb=vram_mb,
        gpu_count=gpu_count,
        vendor=vendor,
        timeout_seconds=timeout_seconds,
        memory_mb=memory_mb,
        cpu_millis=cpu_millis,
        image=image,
        pip=pip,
        function_name=function_name,
    )
    operation = model_operation(
        "POST", "/v1/maps", MapResponse, body=body, idempotent=idempotency_key is not None
    )
    if idempotency_key is None:
        return operation
    headers = {IDEMPOTENCY_HEADER: idempotency_key}
    return replace(operation, call=replace(operation.call, headers=headers))


@validate_call
def get_map(map_id: MapId) -> Operation[MapResponse]:
    """One of the caller's maps: its progress and workers."""
    return model_operation("GET", f"/v1/maps/{map_id}", MapResponse)


@validate_call
def list_maps(
    *,
    limit: Annotated[int, Field(ge=1, le=MAX_MAPS_PAGE)] = 20,
    cursor: Annotated[str, Field(max_length=400)] | None = None,
) -> Operation[MapListResponse]:
    """One page of the caller's maps, newest first, each with its progress and workers;
    pass the page's ``next_cursor`` as ``cursor`` for the next one."""
    params = {"limit": str(limit)}
    if cursor is not None:
        params["cursor"] = cursor
    return model_operation("GET", "/v1/maps", MapListResponse, params=params)


@validate_call
def cancel_map(map_id: MapId) -> Operation[MapResponse]:
    """Stop the map's workers (the chunks already stored stay readable)."""
    return model_operation("POST", f"/v1/maps/{map_id}/cancel", MapResponse, idempotent=True)


@dataclass(frozen=True, slots=True)
class MapRecords:
    """Stored chunks of a map, each checked against its digest, and the first chunk they
    leave out (None: they reach the last)."""

    chunks: list[StoredChunk]
    next_chunk: int | None


def _unread(body: bytes) -> MapRecords:
    raise TypeError("a records answer is read whole, headers included")


def _records(answer: Answer) -> MapRecords:
    next_chunk = answer.headers.get(NEXT_CHUNK_HEADER)
    return MapRecords(
        chunks=checked_records(answer.content),
        next_chunk=int(next_chunk) if next_chunk is not None else None,
    )


@validate_call
def get_map_records(map_id: MapId, start: Chunk = 0) -> Operation[MapRecords]:
    """The stored chunks from ``start`` on, each checked against the digest its worker
    recorded (ServiceUnavailable, nothing unpickled, when one does not match)."""
    call = Call("GET", f"/v1/maps/{quote(map_id)}/records", params={"start": str(start)})
    return Operation(call, _unread, read=_records)


@validate_call
def get_map_chunk(map_id: MapId, chunk: Chunk) -> Operation[bytes]:
    """A finished chunk's record, checked against the digest its worker recorded (Conflict
    ``chunk_not_ready`` while it runs)."""
    call = Call("GET", f"/v1/maps/{quote(map_id)}/chunks/{chunk}")
    return Operation(call, bytes, read=checked_result)
