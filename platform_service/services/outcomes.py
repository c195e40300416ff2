"""What a user's job left: its result (the pickled bytes, opaque) and its output.

The gateway names where the objects are (``GET /v1/jobs/{id}/result``, from the CRD
alone); the platform reads them from the object store and hands them over as they are.
It never unpickles a result: only the SDK does, on the user's machine.
"""

from __future__ import annotations

from anyio import to_thread

from gridweave_clients.gateway import models as gw
from gridweave_clients.gateway import operations as gw_ops
from gridweave_clients.platform.models import JobLogsResponse
from gridweave_controller.phases import JOB_TERMINAL_PHASES, JobPhase
from gridweave_runtime.storage import ObjectNotFound, ObjectStore, ObjectStoreError
from platform_service.errors import (
    DownstreamFailed,
    DownstreamUnavailable,
    JobDidNotComplete,
    JobNotFinished,
)
from platform_service.services.downstream import as_user, downstream_errors
from platform_service.services.jobs import JobServices, get_own_job

__all__ = ["MAX_TRACEBACK_BYTES", "job_logs", "job_result"]

#: The most of a remote traceback a refusal carries (its tail: the raise is at the end).
MAX_TRACEBACK_BYTES = 64 * 1024


async def _outcome(
    services: JobServices, *, user_id: str, job_id: str, wait_s: float = 0.0
) -> gw.JobResultResponse:
    """Where the user's job's outcome is; with ``wait_s``, once it has finished (or the wait
    ran out: the gateway holds the call until its informer sees the job end)."""
    await get_own_job(services, user_id=user_id, job_id=job_id)
    with downstream_errors("job_gateway", passed=()):
        return await services.gateway.run(
            as_user(gw_ops.get_job_result(job_id, wait=wait_s), user_id)
        )


async def _read(store: ObjectStore, uri: str | None) -> bytes:
    """The object at ``uri``; empty when nothing is (or was ever) there."""
    if uri is None:
        return b""
    try:
        return await to_thread.run_sync(store.get, uri)
    except ObjectNotFound:
        return b""
    except ObjectStoreError as exc:
        raise DownstreamUnavailable(
            "object storage is unavailable: try again", service="storage"
        ) from exc


async def job_result(
    services: JobServices, *, user_id: str, job_id: str, wait_s: float = 0.0
) -> bytes:
    """The pickled return value of a Completed job; 409 while running (after waiting up to
    ``wait_s`` for it to finish) or when it did not complete."""
    outcome = await _outcome(services, user_id=user_id, job_id=job_id, wait_s=wait_s)
    if outcome.phase not in JOB_TERMINAL_PHASES:
        raise JobNotFinished(job_id=job_id, phase=outcome.phase.value)
    if outcome.phase is not JobPhase.COMPLETED:
        traceback = (await _read(services.store, outcome.error_ref))[-MAX_TRACEBACK_BYTES:]
        raise JobDidNotComplete(
            f"the job ended {outcome.phase.value}"
            + (f": {outcome.message}" if outcome.message else ""),
            job_id=job_id,
            phase=outcome.phase.value,
            reason=outcome.reason,
            job_message=outcome.message,
            traceback=traceback.decode("utf-8", errors="replace") or None,
        )
    if outcome.result_ref is None:
        raise DownstreamFailed(
            "the job completed without a result reference", service="job_gateway"
        )
    try:
        return await to_thread.run_sync(services.store.get, outcome.result_ref)
    except ObjectStoreError as exc:
        raise DownstreamUnavailable(
            "the job's result could not be read: try again", service="storage"
        ) from exc


def _tail(data: bytes, offset: int, limit: int) -> tuple[str, int, bool]:
    """The text from ``offset`` (its last ``limit`` bytes), the next offset, truncated."""
    start = min(offset, len(data))
    truncated = len(data) - start > limit
    if truncated:
        start = len(data) - limit
    return data[start:].decode("utf-8", errors="replace"), len(data), truncated


async def job_logs(
    services: JobServices,
    *,
    user_id: str,
    job_id: str,
    stdout_offset: int,
    stderr_offset: int,
    limit: int,
) -> JobLogsResponse:
    """stdout and stderr of the job's latest attempt that ran, from the offsets given."""
    outcome = await _outcome(services, user_id=user_id, job_id=job_id)
    stdout, stdout_next, stdout_cut = _tail(
        await _read(services.store, outcome.stdout_ref), stdout_offset, limit
    )
    stderr, stderr_next, stderr_cut = _tail(
        await _read(services.store, outcome.stderr_ref), stderr_offset, limit
    )
    return JobLogsResponse(
        job_id=job_id,
        phase=outcome.phase,
        finished=outcome.finished,
        stdout=stdout,
        stderr=stderr,
        stdout_offset=stdout_next,
        stderr_offset=stderr_next,
        stdout_truncated=stdout_cut,
        stderr_truncated=stderr_cut,
    )
