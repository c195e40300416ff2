"""A user's maps: one function over many inputs, run by several GPU workers at once.

A submission (``POST /v1/maps``) is checked (its chunks match its inputs; its image, if it
names one, pinned first, as a job's), then stored: the function once, each chunk of inputs
as sent (pickled bytes, opaque here). Each of its ``workers`` (at most ``concurrency``, at
most one per chunk) is an ordinary job of the gateway (``<map id>-w<k>``) with its share of
the map (``spec.map``): one allocation, held and billed as a job (a hold of price x timeout
x GPUs per worker, settled once from the seconds it ran). The map's manifest
(``maps/<id>/manifest.json``) is written last: a map is there once all of its workers are.

Progress and results are read (``map_state``) from what the workers' trusted side stored:
each worker's progress (counts and each chunk record's SHA-256); a finished worker's final
progress is its job's result, whose digest the job's status keeps, so a chunk's record is
served with the digest that chain names. The platform never reads a value: it serves
records as bytes, and the SDK checks them before it unpickles.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from anyio import to_thread
from pydantic import ValidationError

from gridweave_clients.errors import Conflict as ServiceConflict
from gridweave_clients.errors import ServiceRefused
from gridweave_clients.gateway import models as gw
from gridweave_clients.gateway import operations as gw_ops
from gridweave_clients.gateway.quotas import UserQuotaModel
from gridweave_clients.maps import MapShareModel, records_stream
from gridweave_clients.platform.maps import MapResponse, SubmitMapRequest
from gridweave_runtime.errors import InvalidRequest
from gridweave_runtime.storage import ObjectNotFound, ObjectStore, ObjectStoreError
from gridweave_runtime.storage.maps import chunk_count, map_objects
from platform_service.errors import (
    ChunkNotReady,
    DownstreamUnavailable,
    MapNotFound,
    PlatformError,
)
from platform_service.services.downstream import as_user, platform_error
from platform_service.services.holds import (
    hold_amount,
    place_job_hold,
    price_table,
    release_unstarted_job_hold,
)
from platform_service.services.images import resolve_image
from platform_service.services.jobs import JobServices, cancel_job
from platform_service.services.keys import AuthenticatedUser
from platform_service.services.map_state import (
    MapManifest,
    map_response,
    read_object,
    worker_job,
    worker_job_id,
    worker_progress,
)

__all__ = [
    "SubmittedMap",
    "cancel_map",
    "get_map",
    "map_chunk",
    "map_records",
    "read_manifest",
    "submit_map",
]

_log = logging.getLogger(__name__)
#: Holds placed, and workers submitted, at once.
_AT_ONCE = 8


@dataclass(frozen=True)
class SubmittedMap:
    """A map as submitted, and whether it answers a retry of an earlier submission."""

    map: MapResponse
    replayed: bool


def new_map_id(secret: bytes, *, user_id: str, idempotency_key: str | None) -> str:
    """The map's id: random, or an HMAC of the user and the idempotency key (a retry meets
    the same map)."""
    if idempotency_key is None:
        return f"map-{secrets.token_hex(10)}"
    message = f"map\x00{user_id}\x00{idempotency_key}".encode()
    return f"map-{hmac.new(secret, message, hashlib.sha256).hexdigest()[:20]}"


async def _all(calls: Iterable[Awaitable[None]]) -> None:
    """Await every call; the first failure is raised once all have ended."""
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


async def submit_map(
    services: JobServices,
    *,
    user: AuthenticatedUser,
    request: SubmitMapRequest,
    idempotency_key: str | None = None,
    quota: UserQuotaModel | None = None,
) -> SubmittedMap:
    """Check, store, hold and submit every worker (402 when a worker's hold is short, 429
    when the whole map would take the user past ``quota``: the holds placed are given back
    and nothing is left)."""
    chunks = chunk_count(request.items, request.chunk_items)
    if len(request.chunks) != chunks:
        raise InvalidRequest(
            "chunks",
            f"{request.items} inputs of {request.chunk_items} to a chunk make {chunks} chunks, "
            f"not {len(request.chunks)}",
        )
    if not request.function:
        raise InvalidRequest("function", "the pickled function must not be empty")
    user_id = user.user_id
    image = None
    if request.image is not None:  # before any hold: a refused image costs nothing
        image = await resolve_image(services.images, user=user, image=request.image)
    map_id = new_map_id(services.id_secret, user_id=user_id, idempotency_key=idempotency_key)
    earlier = await read_manifest(services.store, map_id)
    if earlier is not None and earlier.user_id == user_id:
        return SubmittedMap(await map_response(services, earlier), replayed=True)
    workers = min(request.concurrency, chunks)
    amount = hold_amount(
        await price_table(services.prices),
        vendor=request.vendor,
        vram_mb=request.vram_mb,
        gpu_count=request.gpu_count,
        timeout_seconds=request.timeout_seconds,
    )
    function_ref = await _stored(services.store, map_id, request)
    job_ids = [worker_job_id(map_id, worker) for worker in range(workers)]
    placed: list[str] = []
    limit = asyncio.Semaphore(_AT_ONCE)

    async def hold(job_id: str) -> None:
        async with limit:
            await place_job_hold(services.metering, user_id=user_id, job_id=job_id, amount=amount)
        placed.append(job_id)

    async def submit(worker: int) -> None:
        async with limit:
            await _submit_worker(
                services,
                request,
                user_id=user_id,
                map_id=map_id,
                worker=worker,
                workers=workers,
                function_ref=function_ref,
                image=image,
                quota=quota,
            )

    try:
        await _all(hold(job_id) for job_id in job_ids)
        await _all(submit(worker) for worker in range(workers))
    except BaseException:
        await _undo(services, user_id=user_id, map_id=map_id, jobs=placed)
        raise
    manifest = MapManifest(
        map_id=map_id,
        user_id=user_id,
        items=request.items,
        chunk_items=request.chunk_items,
        workers=workers,
        function_name=request.function_name,
        hold_amount=amount * workers,
        created_at=datetime.now(UTC),
    )
    objects = map_objects(map_id)
    await _put(services.store, objects.manifest, manifest.model_dump_json().encode())
    return SubmittedMap(await map_response(services, manifest), replayed=False)


async def _submit_worker(
    services: JobServices,
    request: SubmitMapRequest,
    *,
    user_id: str,
    map_id: str,
    worker: int,
    workers: int,
    function_ref: str,
    image: str | None,
    quota: UserQuotaModel | None,
) -> None:
    job_id = worker_job_id(map_id, worker)
    submission = gw.SubmitJobRequest(
        job_id=job_id,
        user_id=user_id,
        function_ref=function_ref,
        vram_mb=request.vram_mb,
        gpu_count=request.gpu_count,
        vendor=request.vendor,
        timeout_seconds=request.timeout_seconds,
        max_retries=request.max_retries,
        memory_mb=request.memory_mb,
        cpu_millis=request.cpu_millis,
        image=image,
        pip=request.pip or None,
        function_name=request.function_name,
        hold_reference=job_id,
        map=MapShareModel(
            map_id=map_id,
            worker=worker,
            workers=workers,
            items=request.items,
            chunk_items=request.chunk_items,
            retries=request.retries,
        ),
        quota=quota,
    )
    try:
        await services.gateway.run(as_user(gw_ops.submit_job(submission), user_id))
    except ServiceConflict:
        return  # an earlier try of this submission created it (its answer was lost)
    except ServiceRefused as exc:
        raise platform_error("job_gateway", exc) from exc


async def _undo(services: JobServices, *, user_id: str, map_id: str, jobs: list[str]) -> None:
    """Cancel the workers created and give back the holds placed (a worker cancelled
    before it held a GPU gets its whole hold back; one never created, the same)."""
    for job_id in jobs:
        try:
            await cancel_job(services, user_id=user_id, job_id=job_id)
        except PlatformError:  # never created: its hold alone goes back
            _log.info("map %s: worker %s was not created; releasing its hold", map_id, job_id)
            await release_unstarted_job_hold(services.metering, user_id=user_id, job_id=job_id)


async def _stored(store: ObjectStore, map_id: str, request: SubmitMapRequest) -> str:
    """Store the function and the chunks; the function's URI."""
    objects = map_objects(map_id)

    def write() -> str:
        for chunk, data in enumerate(request.chunks):
            store.put(objects.inputs(chunk), data)
        return store.put(objects.function, request.function)

    try:
        return await to_thread.run_sync(write)
    except ObjectStoreError as exc:
        raise DownstreamUnavailable(
            "object storage is unavailable: try again", service="storage"
        ) from exc


async def _put(store: ObjectStore, key: str, data: bytes) -> None:
    try:
        await to_thread.run_sync(store.put, key, data)
    except ObjectStoreError as exc:
        raise DownstreamUnavailable(
            "object storage is unavailable: try again", service="storage"
        ) from exc


async def read_manifest(store: ObjectStore, map_id: str) -> MapManifest | None:
    """The map's manifest; None while it is not written (the map is not, or not yet)."""
    key = map_objects(map_id).manifest
    try:
        data = await to_thread.run_sync(store.get, store.uri(key))
    except ObjectNotFound:
        return None
    except ObjectStoreError as exc:
        raise DownstreamUnavailable(
            "object storage is unavailable: try again", service="storage"
        ) from exc
    try:
        return MapManifest.model_validate_json(data)
    except ValidationError:
        _log.error("map %s: its manifest is not one", map_id)
        return None


async def _own_manifest(services: JobServices, *, user_id: str, map_id: str) -> MapManifest:
    manifest = await read_manifest(services.store, map_id)
    if manifest is None or manifest.user_id != user_id:
        raise MapNotFound(map_id=map_id)
    return manifest


async def get_map(services: JobServices, *, user_id: str, map_id: str) -> MapResponse:
    """The user's map: its progress and its workers (404 for another user's)."""
    manifest = await _own_manifest(services, user_id=user_id, map_id=map_id)
    return await map_response(services, manifest)


async def cancel_map(services: JobServices, *, user_id: str, map_id: str) -> MapResponse:
    """Cancel every worker still under way (the chunks stored stay readable)."""
    manifest = await _own_manifest(services, user_id=user_id, map_id=map_id)
    for worker in range(manifest.workers):
        job_id = worker_job_id(map_id, worker)
        try:
            await cancel_job(services, user_id=user_id, job_id=job_id)
        except PlatformError as refused:  # it finished meanwhile (or never came to be)
            _log.info("map %s: worker %s not cancelled: %s", map_id, job_id, refused)
    return await map_response(services, manifest)


async def map_chunk(
    services: JobServices, *, user_id: str, map_id: str, chunk: int
) -> tuple[bytes, str]:
    """A chunk's stored record and the SHA-256 its worker recorded for it (409
    ``chunk_not_ready`` while it is not stored)."""
    manifest = await _own_manifest(services, user_id=user_id, map_id=map_id)
    chunks = chunk_count(manifest.items, manifest.chunk_items)
    if chunk >= chunks:
        raise InvalidRequest("chunk", f"the map has {chunks} chunks, numbered from 0")
    worker = chunk % manifest.workers
    job = await worker_job(services, user_id, worker_job_id(map_id, worker))
    progress = await worker_progress(services.store, map_id, worker, job)
    digest = progress.chunks.get(str(chunk))
    if digest is None:
        raise ChunkNotReady(map_id=map_id, chunk=chunk)
    key = map_objects(map_id).outputs(chunk)
    try:
        data = await to_thread.run_sync(services.store.get, services.store.uri(key))
    except ObjectStoreError as exc:
        raise DownstreamUnavailable(
            "the chunk's record could not be read: try again", service="storage"
        ) from exc
    return data, digest


async def map_records(
    services: JobServices, *, user_id: str, map_id: str, start: int, max_bytes: int
) -> tuple[bytes, int | None]:
    """The stored chunks from ``start`` on, in order, as one records stream (each with the
    digest its worker recorded), up to the first chunk not stored or past ``max_bytes``;
    and the first chunk it does not hold (None: it holds every chunk to the last)."""
    manifest = await _own_manifest(services, user_id=user_id, map_id=map_id)
    chunks = chunk_count(manifest.items, manifest.chunk_items)
    if start >= chunks:
        raise InvalidRequest("start", f"the map has {chunks} chunks, numbered from 0")
    job_ids = [worker_job_id(map_id, k) for k in range(manifest.workers)]
    jobs = await asyncio.gather(*(worker_job(services, user_id, job_id) for job_id in job_ids))
    progress = await asyncio.gather(
        *(worker_progress(services.store, map_id, k, job) for k, job in enumerate(jobs))
    )
    digests = {int(chunk): digest for done in progress for chunk, digest in done.chunks.items()}
    found: list[tuple[int, str, bytes]] = []
    size = 0
    chunk = start
    while chunk < chunks and chunk in digests and (not found or size < max_bytes):
        record = await read_object(
            services.store, services.store.uri(map_objects(map_id).outputs(chunk))
        )
        if record is None:
            break
        found.append((chunk, digests[chunk], record))
        size += len(record)
        chunk += 1
    return records_stream(found), (chunk if chunk < chunks else None)
