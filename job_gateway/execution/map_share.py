"""One worker's share of a map, on the trusted side: its chunks run in turn, each stored once.

Worker ``k`` of ``P`` runs chunks ``k, k + P, ...`` (``gridweave_runtime.storage.maps``).
For each, in order: a chunk whose record is already stored (an earlier attempt of this
worker ran it before its node was lost) is counted and skipped, so an input is never run
again once its chunk is stored; else the chunk's inputs go to the container as bytes
(never unpickled here), the container runs the function on each (an input that raises is
tried again up to the map's retries), and the record of every input's result is stored
with its SHA-256 in the worker's progress object. A run cut short (out of memory, its
process killed) keeps the results it gave and records the other inputs of the chunk as
failed with why; the next chunk gets a new container. A failed input never stops the others.
A run cut short because the worker itself is being torn down (a cancel kills its container's
runtime before the worker's own process) stores nothing: its inputs did not fail, they were
stopped, and the share ends there (:class:`ShareStopped`).

The share's result is its final progress (JSON): the gateway stores its digest in the
job's status, so the platform can check every chunk record against it before the SDK
unpickles a value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gridweave_clients.maps import WorkerProgress, chunk_record, read_chunk_record
from gridweave_controller.models import MapShare
from gridweave_runtime.storage import ObjectStore
from gridweave_runtime.storage.maps import (
    chunk_count,
    chunk_items_of,
    map_objects,
    worker_chunks,
)
from job_gateway.sandbox.container import ContainerRun

__all__ = ["ShareStopped", "run_share"]

RunChunk = Callable[[bytes, int], ContainerRun]


class ShareStopped(RuntimeError):
    """The container's runtime was killed from outside the worker mid-chunk."""


def run_share(
    share: MapShare,
    store: ObjectStore,
    run_chunk: RunChunk,
    why_cut_short: Callable[[ContainerRun], str],
) -> WorkerProgress:
    """Run (or count, where already stored) every chunk of the share; its final progress.

    ``run_chunk(inputs, count)``: one container run of a chunk's pickled inputs;
    ``why_cut_short(run)``: in words, why a run gave fewer results than inputs.
    """
    objects = map_objects(share.map_id)
    progress = WorkerProgress(worker=share.worker)
    chunks = chunk_count(share.items, share.chunk_items)
    for chunk in worker_chunks(share.worker, share.workers, chunks):
        count = chunk_items_of(chunk, share.items, share.chunk_items)
        record = _stored(store, objects.outputs(chunk))
        if record is None:
            inputs = store.get(store.uri(objects.inputs(chunk)))
            run = run_chunk(inputs, count)
            results = _completed(run, count, why_cut_short)
            record = chunk_record(chunk, chunk * share.chunk_items, results)
            store.put(objects.outputs(chunk), record)
        done, failed = _counts(record)
        progress = progress.with_chunk(chunk, record, done, failed)
        store.put(objects.progress(share.worker), progress.model_dump_json().encode())
    return progress


def _stored(store: ObjectStore, key: str) -> bytes | None:
    """The record of a chunk an earlier attempt stored; None when it has not (or when what
    is there is not a record: run the chunk again)."""
    try:
        data = store.get(store.uri(key))
        read_chunk_record(data)
    except Exception:
        return None
    return data


def _completed(
    run: ContainerRun, count: int, why_cut_short: Callable[[ContainerRun], str]
) -> list[tuple[dict[str, Any], bytes]]:
    """The run's results, and for each input it gave none for, a failure saying why."""
    results = list(run.results[:count])
    if len(results) < count and run.runtime_killed:
        raise ShareStopped("the container's runtime was killed from outside the worker")
    if len(results) < count:
        why = why_cut_short(run)
        lost = {
            "status": "exception",
            "attempts": 1,
            "exception_type": why.split(":", 1)[0][:500],
            "message": why[:2000],
            "traceback": why,
        }
        results += [(lost, b"")] * (count - len(results))
    return results


def _counts(record: bytes) -> tuple[int, int]:
    _, _, results = read_chunk_record(record)
    failed = sum(1 for result, _ in results if result.status != "ok")
    return len(results) - failed, failed
