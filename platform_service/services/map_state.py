"""A map's state as the platform reads it: its manifest, each worker's job and progress
(from what the workers' trusted side stored), and the map they add up to."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
from datetime import datetime

from anyio import to_thread
from pydantic import BaseModel, ConfigDict, ValidationError

from gridweave_clients.errors import NotFound as ServiceNotFound
from gridweave_clients.gateway import models as gw
from gridweave_clients.gateway import operations as gw_ops
from gridweave_clients.maps import WorkerProgress
from gridweave_clients.platform.maps import MapResponse, MapWorkerResponse
from gridweave_controller.phases import JOB_TERMINAL_PHASES, JobPhase
from gridweave_runtime.storage import ObjectNotFound, ObjectStore, ObjectStoreError
from gridweave_runtime.storage.maps import chunk_count, map_objects
from platform_service.errors import DownstreamUnavailable
from platform_service.services.downstream import as_user, downstream_errors
from platform_service.services.jobs import JobServices

__all__ = [
    "MapManifest",
    "map_response",
    "read_object",
    "worker_job",
    "worker_job_id",
    "worker_progress",
]

_log = logging.getLogger(__name__)


class MapManifest(BaseModel):
    """What the platform keeps of a map beside its objects: whose, its shape, its workers."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    map_id: str
    user_id: str
    items: int
    chunk_items: int
    workers: int
    function_name: str | None = None
    hold_amount: int = 0
    created_at: datetime


def worker_job_id(map_id: str, worker: int) -> str:
    """The job of worker ``worker`` of the map."""
    return f"{map_id}-w{worker}"


async def worker_job(services: JobServices, user_id: str, job_id: str) -> gw.JobResponse | None:
    with downstream_errors("job_gateway", passed=()):
        try:
            return await services.gateway.run(as_user(gw_ops.get_job(job_id), user_id))
        except ServiceNotFound:
            return None


async def worker_progress(
    store: ObjectStore, map_id: str, worker: int, job: gw.JobResponse | None
) -> WorkerProgress:
    """The worker's progress: a Completed worker's result, checked against the digest its
    job's status keeps; else the progress it stored last (none yet: nothing done)."""
    if job is not None and job.phase is JobPhase.COMPLETED and job.result_ref is not None:
        data = await read_object(store, job.result_ref)
        if data is not None and hmac.compare_digest(
            hashlib.sha256(data).hexdigest(), job.result_sha256 or ""
        ):
            try:
                return WorkerProgress.model_validate_json(data)
            except ValidationError:
                _log.error("map %s: worker %d's result is not its progress", map_id, worker)
        else:
            _log.error("map %s: worker %d's result does not match its digest", map_id, worker)
    data = await read_object(store, store.uri(map_objects(map_id).progress(worker)))
    try:
        return WorkerProgress.model_validate_json(data) if data else WorkerProgress(worker=worker)
    except ValidationError:
        return WorkerProgress(worker=worker)


async def read_object(store: ObjectStore, uri: str) -> bytes | None:
    try:
        return await to_thread.run_sync(store.get, uri)
    except ObjectNotFound:
        return None
    except ObjectStoreError as exc:
        raise DownstreamUnavailable(
            "the map's progress could not be read: try again", service="storage"
        ) from exc


async def map_response(services: JobServices, manifest: MapManifest) -> MapResponse:
    """The map now: each worker's job and progress, and their sums."""
    job_ids = [worker_job_id(manifest.map_id, k) for k in range(manifest.workers)]
    jobs = await asyncio.gather(
        *(worker_job(services, manifest.user_id, job_id) for job_id in job_ids)
    )
    progress = await asyncio.gather(
        *(worker_progress(services.store, manifest.map_id, k, job) for k, job in enumerate(jobs))
    )
    workers = [
        MapWorkerResponse(
            job_id=job_id,
            phase=job.phase if job is not None else JobPhase.PENDING,
            node=job.node if job is not None else None,
            gpu_indices=job.gpu_indices if job is not None else [],
            done=done.done,
            failed=done.failed,
            attempts=job.attempts if job is not None else 0,
            reason=job.reason if job is not None else None,
            message=job.message if job is not None else None,
        )
        for job_id, job, done in zip(job_ids, jobs, progress, strict=True)
    ]
    phases = {worker.phase for worker in workers}
    finished = phases <= JOB_TERMINAL_PHASES
    return MapResponse(
        map_id=manifest.map_id,
        function_name=manifest.function_name,
        phase=_map_phase(phases, finished),
        finished=finished,
        items=manifest.items,
        chunks=chunk_count(manifest.items, manifest.chunk_items),
        chunk_items=manifest.chunk_items,
        done=sum(worker.done for worker in workers),
        failed=sum(worker.failed for worker in workers),
        workers=workers,
        created_at=manifest.created_at,
        hold_amount=manifest.hold_amount,
    )


def _map_phase(phases: set[JobPhase], finished: bool) -> str:
    if not finished:
        started = phases & {JobPhase.RUNNING} or phases & JOB_TERMINAL_PHASES
        return "Running" if started else "Pending"
    if JobPhase.CANCELLED in phases:
        return "Cancelled"
    if phases & {JobPhase.FAILED, JobPhase.TIMED_OUT}:
        return "Failed"
    return "Completed"
