"""A map's objects, and the records its workers write: where they are and how they read.

A map is one function over many inputs, run by P workers (each an ordinary GridweaveJob
with ``spec.map``: one allocation, billed as a job). Its objects:

- ``maps/<map id>/function.pkl``: the pickled function (the SDK's bytes, opaque here);
- ``maps/<map id>/inputs/<chunk>``: chunk ``c`` of the inputs, a pickled list of
  ``(args, kwargs)``: inputs ``c * chunk_items`` onwards (the last chunk may be short);
- ``maps/<map id>/outputs/<chunk>``: what the worker that ran chunk ``c`` stored (a
  :func:`chunk_record`): a JSON header with each input's status, then each input's payload;
- ``maps/<map id>/workers/<k>/progress.json``: worker ``k``'s counts and the digests of the
  chunks it stored, rewritten after each chunk (:class:`WorkerProgress`).

Worker ``k`` of ``P`` runs chunks ``k, k + P, k + 2P, ...`` (:func:`worker_chunks`). Every
object is written by the trusted side (the platform, the workers' trusted process): the
user's code runs in a container that cannot reach the store. A record is parsed strictly
and bounded; payloads are never unpickled here.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ChunkResult",
    "MapObjects",
    "WorkerProgress",
    "chunk_count",
    "chunk_items_of",
    "chunk_record",
    "map_objects",
    "read_chunk_record",
    "worker_chunks",
]

#: A chunk record's header (JSON) larger than this is refused unread.
MAX_HEADER_BYTES = 16 << 20
_LENGTH = struct.Struct(">Q")


@dataclass(frozen=True, slots=True)
class MapObjects:
    """The keys (relative to the store's root) of one map's objects."""

    map_id: str

    @property
    def function(self) -> str:
        return f"maps/{self.map_id}/function.pkl"

    def inputs(self, chunk: int) -> str:
        return f"maps/{self.map_id}/inputs/{chunk:06d}"

    def outputs(self, chunk: int) -> str:
        return f"maps/{self.map_id}/outputs/{chunk:06d}"

    def progress(self, worker: int) -> str:
        return f"maps/{self.map_id}/workers/{worker}/progress.json"


def map_objects(map_id: str) -> MapObjects:
    """Where map ``map_id``'s objects are."""
    return MapObjects(map_id)


def chunk_count(items: int, chunk_items: int) -> int:
    """How many chunks ``items`` inputs make, ``chunk_items`` to a chunk."""
    return math.ceil(items / chunk_items)


def chunk_items_of(chunk: int, items: int, chunk_items: int) -> int:
    """How many inputs chunk ``chunk`` holds (the last may hold fewer)."""
    return max(0, min(chunk_items, items - chunk * chunk_items))


def worker_chunks(worker: int, workers: int, chunks: int) -> range:
    """The chunks worker ``worker`` of ``workers`` runs, in order."""
    return range(worker, chunks, workers)


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
    view = memoryview(data)
    frames: list[bytes] = []
    position = 0
    while position < len(view):
        if position + _LENGTH.size > len(view):
            raise ValueError("a chunk record ends inside a frame's length")
        (length,) = _LENGTH.unpack(view[position : position + _LENGTH.size])
        position += _LENGTH.size
        if position + length > len(view) or (not frames and length > MAX_HEADER_BYTES):
            raise ValueError("a chunk record's frame runs past its end")
        frames.append(bytes(view[position : position + length]))
        position += length
    if not frames:
        raise ValueError("an empty chunk record")
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
