"""A map's wire models: a worker's share, the records its workers store, their progress.

A map (``Function.map`` in the SDK) is one function over many inputs, run by ``workers``
jobs: worker ``k`` runs chunks ``k, k + workers, ...`` of ``chunk_items`` inputs each (the
objects' layout: ``gridweave_runtime.storage.maps``). The bounds are the CRD's
(``spec.map``).

A chunk's record (:func:`chunk_record`, written by a worker's trusted side) is frames: an
8-byte big-endian length, then the bytes; the first frame is a JSON header with each
input's status (:class:`ChunkResult`), then one frame per input's payload (its pickled
value; empty when it raised). The SDK reads it (:func:`read_chunk_record`) once its
SHA-256 matched the one the worker recorded; nothing here unpickles a payload.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gridweave_controller.validation import (
    MAX_CHUNK_ITEMS,
    MAX_MAP_ITEMS,
    MAX_MAP_RETRIES,
    MAX_MAP_WORKERS,
)

__all__ = [
    "ChunkResult",
    "StoredChunk",
    "checked_records",
    "records_stream",
    "MapId",
    "MapShareModel",
    "WorkerProgress",
    "chunk_record",
    "read_chunk_record",
]

#: A chunk record's header (JSON) larger than this is refused unread.
MAX_HEADER_BYTES = 16 << 20
_LENGTH = struct.Struct(">Q")

MapId = Annotated[
    str, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
]


class MapShareModel(BaseModel):
    """One worker's share of a map: worker ``worker`` of ``workers`` over ``items`` inputs,
    ``chunk_items`` to a chunk, an input that raised tried again ``retries`` times at most."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    map_id: MapId
    worker: int = Field(strict=True, ge=0, lt=MAX_MAP_WORKERS)
    workers: int = Field(strict=True, ge=1, le=MAX_MAP_WORKERS)
    items: int = Field(strict=True, ge=1, le=MAX_MAP_ITEMS)
    chunk_items: int = Field(strict=True, ge=1, le=MAX_CHUNK_ITEMS)
    retries: int = Field(default=0, strict=True, ge=0, le=MAX_MAP_RETRIES)

    @model_validator(mode="after")
    def _worker_below_workers(self) -> MapShareModel:
        if self.worker >= self.workers:
            raise ValueError("worker must be below workers")
        return self


class ChunkResult(BaseModel):
    """How one input ended: ``ok`` (its payload is the pickled value) or ``exception`` (its
    type, message and the remote traceback; an empty payload), after ``attempts`` tries."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    status: Literal["ok", "exception"]
    attempts: int = Field(default=1, ge=1)
    exception_type: str | None = Field(default=None, max_length=500)
    message: str | None = Field(default=None, max_length=2000)
    traceback: str | None = Field(default=None, max_length=64 * 1024)


class _ChunkHeader(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    chunk: int = Field(ge=0)
    first: int = Field(ge=0)
    results: list[ChunkResult]


def chunk_record(chunk: int, first: int, results: list[tuple[dict[str, Any], bytes]]) -> bytes:
    """The stored record of chunk ``chunk`` (whose first input is ``first``): a frame of its
    JSON header, then one frame per input's payload. Frames: an 8-byte big-endian length,
    then the bytes."""
    header = {
        "chunk": chunk,
        "first": first,
        "results": [_result(result).model_dump(exclude_none=True) for result, _ in results],
    }
    frames = [json.dumps(header).encode(), *(payload for _, payload in results)]
    return b"".join(_LENGTH.pack(len(frame)) + frame for frame in frames)


def _result(result: dict[str, Any]) -> ChunkResult:
    """A runner's result header as a record keeps it (its text bounded)."""

    def text(name: str, limit: int, *, tail: bool = False) -> str | None:
        value = result.get(name)
        if not isinstance(value, str):
            return None
        return value[-limit:] if tail else value[:limit]

    attempts = result.get("attempts")
    return ChunkResult(
        status="ok" if result.get("status") == "ok" else "exception",
        attempts=attempts if isinstance(attempts, int) and attempts >= 1 else 1,
        exception_type=text("exception_type", 500),
        message=text("message", 2000),
        traceback=text("traceback", 64 * 1024, tail=True),
    )


def read_chunk_record(data: bytes) -> tuple[int, int, list[tuple[ChunkResult, bytes]]]:
    """(chunk, first input, each input's result and payload) of a stored record;
    ``ValueError`` when it is not one."""
    frames = _frames(data)
    if not frames or len(frames[0]) > MAX_HEADER_BYTES:
        raise ValueError("a chunk record without its header")
    header = _ChunkHeader.model_validate_json(frames[0])
    if len(frames) - 1 != len(header.results):
        raise ValueError("a chunk record's payloads do not match its results")
    return header.chunk, header.first, list(zip(header.results, frames[1:], strict=True))


class WorkerProgress(BaseModel):
    """What worker ``worker`` of a map has done so far: inputs done and failed, and the
    SHA-256 of each chunk record it stored (chunk number as a string, JSON's keys)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    worker: int = Field(ge=0)
    done: int = Field(default=0, ge=0)
    failed: int = Field(default=0, ge=0)
    chunks: dict[str, str] = Field(default_factory=dict)

    def with_chunk(self, chunk: int, record: bytes, done: int, failed: int) -> WorkerProgress:
        """This progress and one more chunk stored."""
        digests = {**self.chunks, str(chunk): hashlib.sha256(record).hexdigest()}
        return WorkerProgress(
            worker=self.worker,
            done=self.done + done,
            failed=self.failed + failed,
            chunks=digests,
        )


def _frames(data: bytes) -> list[bytes]:
    """The frames of ``data`` (each an 8-byte big-endian length, then the bytes)."""
    view = memoryview(data)
    frames: list[bytes] = []
    position = 0
    while position < len(view):
        if position + _LENGTH.size > len(view):
            raise ValueError("frames end inside a frame's length")
        (length,) = _LENGTH.unpack(view[position : position + _LENGTH.size])
        position += _LENGTH.size
        if position + length > len(view):
            raise ValueError("a frame runs past the end")
        frames.append(bytes(view[position : position + length]))
        position += length
    return frames


class StoredChunk(BaseModel):
    """One chunk of a records stream: its number, its record, the digest its worker kept."""

    model_config = ConfigDict(frozen=True)

    chunk: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    record: bytes


def records_stream(chunks: list[tuple[int, str, bytes]]) -> bytes:
    """Chunks' records as one body: for each, a frame of ``{"chunk", "sha256"}`` (JSON) and
    a frame of its record."""
    frames: list[bytes] = []
    for chunk, digest, record in chunks:
        frames += [json.dumps({"chunk": chunk, "sha256": digest}).encode(), record]
    return b"".join(_LENGTH.pack(len(frame)) + frame for frame in frames)


def checked_records(data: bytes) -> list[StoredChunk]:
    """The chunks of a records stream, each record checked against its digest; ``ValueError``
    naming the first whose bytes do not match (nothing of it may be unpickled)."""
    frames = _frames(data)
    if len(frames) % 2:
        raise ValueError("a records stream ends between a chunk's header and its record")
    chunks = []
    for header, record in zip(frames[::2], frames[1::2], strict=True):
        described = json.loads(header)
        chunk = StoredChunk(chunk=described["chunk"], sha256=described["sha256"], record=record)
        actual = hashlib.sha256(record).hexdigest()
        if actual != chunk.sha256:
            raise ValueError(
                f"chunk {chunk.chunk}'s record has SHA-256 {actual}, not the {chunk.sha256} its "
                "worker recorded: it was changed after it was stored; not unpickled"
            )
        chunks.append(chunk)
    return chunks
