"""A user's jobs: submitted (inputs stored, hold placed, gateway told), read, listed, cancelled.

A submission is all or nothing for the user: its image, if it names one, is checked and
pinned to its digest first (:mod:`platform_service.services.images`: a refused or missing
image costs nothing), then the hold is placed (a 402 costs no storage), then the pickled
function and arguments are stored as opaque bytes
(``gridweave_runtime.storage.input_objects``), then the gateway creates the GridweaveJob.
When the gateway refuses (no GPU could ever hold it: its 422 naming the field and the
largest GPU passes through), the hold is released and the objects deleted. When the
gateway does not answer, the job is looked up (unless the call never left: then nothing
was created): absent, the same undo; present, the submission stands; unknown, nothing is
undone (the job may exist) and the 503 names the job id so the user can look it up.

With an idempotency key the job id is derived from the user and the key (an HMAC), so a
retried submission finds the job its lost answer created and answers it again (200,
``Idempotent-Replayed: true``) instead of running the function twice; the same key with
other resources asked is a 409 ``idempotency_conflict`` naming them. Two retries racing
meet at the gateway: the loser's 409 reads the winner's job back, and nothing is undone,
since the hold (keyed by the job id) and the inputs are the same ones. A key whose
submission was refused (its hold released) is spent: reusing it is a 409 too.

Another user's job is answered exactly like a missing one (404): its id says nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from dataclasses import dataclass

import httpx
from anyio import to_thread

from gridweave_clients._core import Failure, classify_failure
from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.errors import Conflict as ServiceConflict
from gridweave_clients.errors import NotFound as ServiceNotFound
from gridweave_clients.errors import ServiceError, ServiceRefused, ServiceUnavailable
from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.gateway import models as gw
from gridweave_clients.gateway import operations as gw_ops
from gridweave_clients.gateway.quotas import UserQuotaModel
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering.price_source import PriceSource
from gridweave_clients.platform.models import JobListResponse, JobResponse, SubmitJobRequest
from gridweave_controller.phases import JOB_TERMINAL_PHASES, JobPhase
from gridweave_runtime.errors import InvalidRequest
from gridweave_runtime.storage import ObjectStore, ObjectStoreError, input_objects
from platform_service.errors import (
    DownstreamUnavailable,
    IdempotencyConflict,
    NotFound,
)
from platform_service.services.downstream import as_user, downstream_errors, platform_error
from platform_service.services.holds import (
    HoldKeyReused,
    hold_amount,
    hold_is_open,
    place_job_hold,
    price_table,
    release_unstarted_job_hold,
)
from platform_service.services.images import ImageRegistry, resolve_image
from platform_service.services.keys import AuthenticatedUser

__all__ = [
    "JobServices",
    "Submitted",
    "cancel_job",
    "get_own_job",
    "job_response",
    "list_jobs",
    "new_job_id",
    "submit_job",
]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobServices:
    """What the job routes call: metering (holds), credit (reads), the gateway, the store,
    the prices.

    ``id_secret`` keys the HMAC that turns a user's idempotency key into a job id.
    """

    credit: AsyncCreditClient
    metering: AsyncMeteringClient
    gateway: AsyncGatewayClient
    store: ObjectStore
    #: metering's price table, read from metering
    prices: PriceSource
    id_secret: bytes
    images: ImageRegistry


@dataclass(frozen=True)
class Submitted:
    """A submission's answer: the job, and whether it replays an earlier submission."""

    job: JobResponse
    replayed: bool


def new_job_id(secret: bytes, *, user_id: str, idempotency_key: str | None) -> str:
    """The job id: a DNS-1123 label, the GridweaveJob's name and the hold's reference.

    Random without an idempotency key; else an HMAC of the user and the key, so only that
    user's retries with that key meet on it.
    """
    if idempotency_key is None:
        return f"job-{secrets.token_hex(10)}"
    message = f"job\x00{user_id}\x00{idempotency_key}".encode()
    return f"job-{hmac.new(secret, message, hashlib.sha256).hexdigest()[:20]}"


def job_response(
    job: gw.JobResponse, *, hold: int | None = None, conditions: bool = True
) -> JobResponse:
    """The user's view of a gateway job (storage locations left out); a list's leaves the
    conditions out (``conditions=False``), so a poll of a page stays small."""
    return JobResponse(
        job_id=job.job_id,
        function_name=job.function_name,
        phase=job.phase,
        finished=job.phase in JOB_TERMINAL_PHASES,
        vram_mb=job.vram_mb,
        gpu_count=job.gpu_count,
        vendor=job.vendor,
        timeout_seconds=job.timeout_seconds,
        max_retries=job.max_retries,
        memory_mb=job.memory_mb,
        cpu_millis=job.cpu_millis,
        gpu_models=job.gpu_models,
        image=job.image,
        pip=job.pip,
        node=job.node,
        gpu_indices=job.gpu_indices,
        attempts=job.attempts,
        reason=job.reason,
        message=job.message,
        created_at=job.created_at,
        allocated_at=job.allocated_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        wall_seconds=job.wall_seconds,
        billed_seconds=job.billed_seconds,
        hold_amount=hold,
        conditions=job.conditions if conditions else [],
    )


def _store_inputs(
    store: ObjectStore, job_id: str, request: SubmitJobRequest
) -> tuple[str, str | None]:
    keys = input_objects(job_id)
    function_ref = store.put(keys.function, request.function)
    args_ref = None if request.args is None else store.put(keys.args, request.args)
    return function_ref, args_ref


def _delete_inputs(store: ObjectStore, job_id: str) -> None:
    keys = input_objects(job_id)
    for key in (keys.function, keys.args):
        store.delete(key)


async def _undo(services: JobServices, *, user_id: str, job_id: str) -> None:
    """Give the hold back and delete the inputs of a job the gateway never created (a
    release that fails is logged: the refusal the user must see comes first, and metering's
    hold sweeper releases it later)."""
    await release_unstarted_job_hold(services.metering, user_id=user_id, job_id=job_id)
    try:
        await to_thread.run_sync(_delete_inputs, services.store, job_id)
    except ObjectStoreError:
        _log.warning("job %s: its inputs could not be deleted", job_id, exc_info=True)


_ASKED = (
    "vram_mb",
    "gpu_count",
    "vendor",
    "timeout_seconds",
    "max_retries",
    "memory_mb",
    "cpu_millis",
    "gpu_models",
)


async def _replay(
    services: JobServices,
    *,
    user_id: str,
    job_id: str,
    request: SubmitJobRequest,
    image: str | None,
) -> Submitted | None:
    """The earlier submission of this job id, answered again; None when there is none."""
    with downstream_errors("job_gateway", passed=()):
        try:
            job = await services.gateway.run(as_user(gw_ops.get_job(job_id), user_id))
        except ServiceNotFound:
            return None
    differing = [name for name in _ASKED if getattr(job, name) != getattr(request, name)]
    if job.image != image:
        differing.append("image")
    if (job.pip or []) != (request.pip or []):
        differing.append("pip")
    if job.user_id != user_id or differing:
        raise IdempotencyConflict(job_id=job_id, differing_fields=differing)
    amount = hold_amount(
        await price_table(services.prices),
        vendor=job.vendor,
        vram_mb=job.vram_mb,
        gpu_count=job.gpu_count,
        timeout_seconds=request.timeout_seconds,
    )
    return Submitted(job_response(job, hold=amount), replayed=True)


async def submit_job(
    services: JobServices,
    *,
    user: AuthenticatedUser,
    request: SubmitJobRequest,
    idempotency_key: str | None = None,
    quota: UserQuotaModel | None = None,
) -> Submitted:
    """Check the image, hold, store, submit (carrying the user's ``quota``: 429 past it); on
    a refusal nothing is left behind (see the module's rules)."""
    if not request.function:
        raise InvalidRequest("function", "the pickled function must not be empty")
    user_id = user.user_id
    image = None
    if request.image is not None:  # before any hold: a refused image costs nothing
        image = await resolve_image(services.images, user=user, image=request.image)
    amount = hold_amount(
        await price_table(services.prices),
        vendor=request.vendor,
        vram_mb=request.vram_mb,
        gpu_count=request.gpu_count,
        timeout_seconds=request.timeout_seconds,
    )
    job_id = new_job_id(services.id_secret, user_id=user_id, idempotency_key=idempotency_key)
    try:
        hold = await place_job_hold(
            services.metering, user_id=user_id, job_id=job_id, amount=amount
        )
    except HoldKeyReused:
        # a retry asking for another hold: the earlier job names the fields that differ
        earlier = await _replay(
            services, user_id=user_id, job_id=job_id, request=request, image=image
        )
        if earlier is not None:
            return earlier
        raise IdempotencyConflict(job_id=job_id, differing_fields=[]) from None
    if hold.replayed:
        # the job's id was submitted before (an idempotency key sent again): its job, else
        # its hold must still be open (a refused submission released it)
        earlier = await _replay(
            services, user_id=user_id, job_id=job_id, request=request, image=image
        )
        if earlier is not None:
            return earlier
        if not await hold_is_open(services.credit, user_id=user_id, hold_id=hold.hold_id):
            raise IdempotencyConflict(
                "a submission with this idempotency key was refused earlier: send a new key",
                job_id=job_id,
                differing_fields=[],
            )
    try:
        function_ref, args_ref = await to_thread.run_sync(
            _store_inputs, services.store, job_id, request
        )
    except ObjectStoreError as exc:
        await _undo(services, user_id=user_id, job_id=job_id)
        raise DownstreamUnavailable(
            "object storage is unavailable: try again", service="storage"
        ) from exc
    submission = gw.SubmitJobRequest(
        job_id=job_id,
        user_id=user_id,
        function_ref=function_ref,
        args_ref=args_ref,
        vram_mb=request.vram_mb,
        gpu_count=request.gpu_count,
        vendor=request.vendor,
        timeout_seconds=request.timeout_seconds,
        max_retries=request.max_retries,
        memory_mb=request.memory_mb,
        cpu_millis=request.cpu_millis,
        gpu_models=request.gpu_models,
        image=image,
        pip=request.pip or None,
        function_name=request.function_name,
        hold_reference=job_id,
        quota=quota,
    )
    try:
        job = await services.gateway.run(as_user(gw_ops.submit_job(submission), user_id))
    except ServiceRefused as exc:
        if isinstance(exc, ServiceConflict) and idempotency_key is not None:
            # a retry with the same key created it first: same hold, same inputs, keep them
            earlier = await _replay(
                services, user_id=user_id, job_id=job_id, request=request, image=image
            )
            if earlier is not None:
                return earlier
        await _undo(services, user_id=user_id, job_id=job_id)
        raise platform_error("job_gateway", exc) from exc
    except ServiceUnavailable as exc:
        job = await _find_after_lost_answer(services, user_id=user_id, job_id=job_id, cause=exc)
    return Submitted(job_response(job, hold=amount), replayed=False)


def _never_sent(exc: ServiceError) -> bool:
    """The call never left this process (the client's own rule: connect errors, a full pool)."""
    cause = exc.__cause__
    return isinstance(cause, httpx.TransportError) and classify_failure(cause) is Failure.NOT_SENT


async def _find_after_lost_answer(
    services: JobServices, *, user_id: str, job_id: str, cause: ServiceError
) -> gw.JobResponse:
    if _never_sent(cause):
        await _undo(services, user_id=user_id, job_id=job_id)
        raise DownstreamUnavailable(
            "job_gateway is unavailable: nothing was submitted, try again", service="job_gateway"
        ) from cause
    try:
        return await services.gateway.run(as_user(gw_ops.get_job(job_id), user_id))
    except ServiceNotFound:
        await _undo(services, user_id=user_id, job_id=job_id)
        raise DownstreamUnavailable(
            "job_gateway is unavailable: nothing was submitted, try again", service="job_gateway"
        ) from cause
    except ServiceError:
        raise DownstreamUnavailable(
            "job_gateway is unavailable: the job may have been created; look it up by its id",
            service="job_gateway",
            job_id=job_id,
        ) from cause


async def get_own_job(services: JobServices, *, user_id: str, job_id: str) -> gw.JobResponse:
    """The user's job; another user's, or none, is 404 alike."""
    with downstream_errors("job_gateway", passed=()):
        try:
            job = await services.gateway.run(as_user(gw_ops.get_job(job_id), user_id))
        except ServiceNotFound:
            job = None
    if job is None or job.user_id != user_id:
        raise NotFound("no such job", resource="job", id=job_id)
    return job


async def list_jobs(
    services: JobServices, *, user_id: str, phase: JobPhase | None
) -> JobListResponse:
    """The user's jobs, oldest first, optionally in one phase."""
    with downstream_errors("job_gateway", passed=()):
        listed = await services.gateway.run(
            as_user(gw_ops.list_jobs(user_id, phase=phase), user_id)
        )
    return JobListResponse(
        jobs=[job_response(job, conditions=False) for job in listed.jobs if job.user_id == user_id]
    )


async def cancel_job(services: JobServices, *, user_id: str, job_id: str) -> JobResponse:
    """Cancel the user's job (a cancelled one answers again; another finished one is 409).

    A job cancelled before it was allocated gets its whole hold back here; one that held a
    GPU is settled by metering from the usage the gateway reports (its running seconds).
    """
    await get_own_job(services, user_id=user_id, job_id=job_id)
    with downstream_errors("job_gateway"):
        job = await services.gateway.run(as_user(gw_ops.cancel_job(job_id), user_id))
    if job.phase is JobPhase.CANCELLED and job.node is None and not job.billed_seconds:
        # never held a GPU, so nothing to bill (a requeued job's lost attempt is billed)
        await release_unstarted_job_hold(services.metering, user_id=user_id, job_id=job_id)
    return job_response(job)
