"""Create, read, list, stop and wake endpoints: the rules behind ``/v1/endpoints``.

Every check runs before the GridweaveEndpoint is created, so a refused request creates
nothing. Reads go to the CRD store. Stopping is one setter (Stopped frees the VRAM in the
allocation map, and the reconciler deletes the Serve application); a wake puts a Stopped
endpoint back in the scheduling loop's queue, where any number of wakes make one
placement, and long-polls the reconciler until it runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace

from gridweave_clients.gateway.endpoints import (
    CreateEndpointRequest,
    EndpointResponse,
    StopEndpointRequest,
)
from gridweave_clients.gateway.quotas import UserQuotaModel
from gridweave_controller.errors import (
    AlreadyExists,
    Conflict,
    CrdError,
    CRDNotInstalled,
    Invalid,
    NotFound,
    TransportError,
)
from gridweave_controller.models import Endpoint
from gridweave_controller.operations import AsyncClientBase
from gridweave_controller.phases import (
    EndpointPhase,
    EndpointStopReason,
    endpoint_is_replaceable,
)
from gridweave_runtime.errors import InvalidRequest
from job_gateway.endpoints.settings import EndpointSettings
from job_gateway.endpoints.vllm_config import vllm_refusal
from job_gateway.errors import (
    ClusterUnavailable,
    EndpointAlreadyExists,
    EndpointFailed,
    EndpointNotFound,
    EndpointStopped,
)
from job_gateway.quotas import Holding, QuotaBook, admitted, deployed_holding
from job_gateway.scheduler import (
    PlacementRequest,
    Scheduler,
    Unplaced,
    endpoint_resource,
    endpoint_vram_mb,
)
from job_gateway.scheduling import SchedulingLoop
from job_gateway.services.jobs import impossible_field

__all__ = [
    "SettleReplaced",
    "SettledWait",
    "create_endpoint",
    "endpoint_response",
    "get_endpoint",
    "list_endpoints",
    "stop_endpoint",
    "wake_endpoint",
]

#: Bills an ended endpoint's last run to its end before a deploy replaces its object.
SettleReplaced = Callable[[Endpoint], Awaitable[None]]
#: Waits until an endpoint runs, has failed or is gone, at most the given seconds, in a copy
#: later than the given resourceVersion.
SettledWait = Callable[[str, float, str | None], Awaitable[None]]


@contextmanager
def crd_errors(endpoint_id: str | None = None) -> Iterator[None]:
    """The controller's errors as the gateway's own (mapped to HTTP once, in the app)."""
    try:
        yield
    except (CRDNotInstalled, TransportError) as exc:
        raise ClusterUnavailable(detail=str(exc)) from exc
    except NotFound as exc:
        raise EndpointNotFound(endpoint_id=endpoint_id) from exc
    except AlreadyExists as exc:
        raise EndpointAlreadyExists(endpoint_id=endpoint_id) from exc
    except Invalid as exc:
        raise InvalidRequest(exc.field or "body", str(exc)) from exc
    except CrdError as exc:  # anything else the store said: not the caller's fault
        raise ClusterUnavailable(detail=str(exc)) from exc


def endpoint_response(endpoint: Endpoint, waking: Unplaced | None = None) -> EndpointResponse:
    """The API's view of a GridweaveEndpoint; ``waking``: why it waits, woken and not placed
    yet (``SchedulingLoop.why_waking``)."""
    spec, status = endpoint.spec, endpoint.status
    return EndpointResponse(
        id=endpoint.name,
        user_id=spec.user_id,
        owner=endpoint.billing_owner,
        mode=spec.mode,
        model=spec.model,
        image=spec.image,
        pip=list(spec.pip) if spec.pip else None,
        gpu_models=list(spec.gpu_models) if spec.gpu_models else None,
        memory_mb=spec.memory_mb,
        cpu_millis=spec.cpu_millis,
        phase=status.phase,
        reason=status.reason,
        message=status.message,
        url=status.url,
        node=status.node,
        gpu_indices=list(status.gpu_indices),
        placed_vendor=status.vendor,
        ready_replicas=status.ready_replicas,
        health=status.health,
        created_at=endpoint.metadata.creation_timestamp,
        started_at=status.started_at,
        stopped_at=status.stopped_at,
        run_replicas=status.run_replicas,
        billed_seconds=status.billed_seconds,
        vram_mb=spec.vram_mb,
        gpu_count=spec.gpu_count,
        vendor=spec.vendor,
        min_replicas=spec.min_replicas,
        max_replicas=spec.max_replicas,
        idle_seconds=spec.idle_seconds,
        waking_reason=None if waking is None else waking.reason,
        waking_message=None if waking is None else waking.message,
    )


async def create_endpoint(
    *,
    crd: AsyncClientBase,
    scheduler: Scheduler,
    request: CreateEndpointRequest,
    endpoint_settings: EndpointSettings,
    quotas: QuotaBook | None = None,
    settle_replaced: SettleReplaced | None = None,
) -> Endpoint:
    """Create the endpoint in Pending; 422 naming the field when it could never run here
    (mode vllm: see ``vllm_refusal``); 429 when it would take its user past
    ``request.quota``.

    An endpoint of the id that exists is a 409, unless ``replace_ended`` asks to replace it
    and it is Failed or Stopped other than Idle: ``settle_replaced`` bills its last run to
    its end, then its object is deleted and this one created.
    """
    if request.mode == "vllm":
        refusal = vllm_refusal(endpoint_settings, scheduler.inventory)
        if refusal is not None:
            raise InvalidRequest("mode", refusal)
        if request.model_ref is None and not (request.model or "").startswith("/"):
            raise InvalidRequest(
                "model_ref",
                "vllm serves a model directory and asks no model hub: give model_ref (a local "
                "path or an object-storage URI)",
            )
    if request.min_replicas > request.max_replicas:
        raise InvalidRequest(
            "min_replicas",
            f"min_replicas ({request.min_replicas}) exceeds max_replicas ({request.max_replicas})",
        )
    asked = PlacementRequest(
        name=request.endpoint_id,
        vram_mb=request.vram_mb,
        gpu_count=request.gpu_count,
        vendor=request.vendor,
        kind="endpoint",
        real_gpu=request.mode == "vllm",
        cpu_millis=request.cpu_millis or 0,
        memory_mb=request.memory_mb or 0,
        gpu_models=tuple(request.gpu_models or ()),
    )
    impossible = scheduler.check(asked)
    if impossible is not None:
        raise InvalidRequest(impossible_field(impossible), impossible.message)
    held = endpoint_vram_mb(request.vram_mb, request.max_replicas)
    all_replicas = replace(
        asked,
        vram_mb=held,
        cpu_millis=endpoint_resource(asked.cpu_millis, request.max_replicas),
        memory_mb=endpoint_resource(asked.memory_mb, request.max_replicas),
    )
    impossible = scheduler.check(all_replicas)
    if impossible is not None:  # one replica fits, max_replicas of them on its GPUs do not
        raise InvalidRequest(
            "max_replicas",
            f"{request.max_replicas} replicas of {request.vram_mb} MiB share the endpoint's "
            f"GPUs ({held} MiB on each): {impossible.message}",
        )
    async with admitted(
        quotas,
        user_id=request.user_id,
        quota=request.quota,
        kind="endpoint",
        name=request.endpoint_id,
        holding=Holding(request.gpu_count, held * request.gpu_count),
    ):
        return await _create_or_replace(crd, request, settle_replaced)


async def _create_or_replace(
    crd: AsyncClientBase, request: CreateEndpointRequest, settle_replaced: SettleReplaced | None
) -> Endpoint:
    with crd_errors(request.endpoint_id):
        try:
            return await _create(crd, request)
        except AlreadyExists:
            if not request.replace_ended:
                raise
            existing = await crd.get_endpoint(request.endpoint_id)
            if not endpoint_is_replaceable(existing.phase, existing.status.reason):
                raise
            # ended and never woken again (only Idle is): nothing runs; once its last run is
            # billed, nothing is held
            if settle_replaced is not None:
                await settle_replaced(existing)
            with suppress(NotFound):
                await crd.delete_endpoint(request.endpoint_id)
            return await _create(crd, request)


async def _create(crd: AsyncClientBase, request: CreateEndpointRequest) -> Endpoint:
    return await crd.create_endpoint(
        request.endpoint_id,
        request.user_id,
        vram_mb=request.vram_mb,
        model=request.model,
        mode=request.mode,
        model_ref=request.model_ref,
        function_ref=request.function_ref,
        image=request.image,
        pip=request.pip,
        owner=request.owner,
        gpu_count=request.gpu_count,
        vendor=request.vendor,
        gpu_models=request.gpu_models,
        memory_mb=request.memory_mb,
        cpu_millis=request.cpu_millis,
        min_replicas=request.min_replicas,
        max_replicas=request.max_replicas,
        idle_seconds=request.idle_seconds,
    )


async def get_endpoint(*, crd: AsyncClientBase, endpoint_id: str) -> Endpoint:
    """One endpoint, read from the store."""
    with crd_errors(endpoint_id):
        return await crd.get_endpoint(endpoint_id)


async def list_endpoints(
    *, crd: AsyncClientBase, user_id: str | None, phase: EndpointPhase | None
) -> list[Endpoint]:
    """A user's endpoints (or everyone's), optionally in one phase, oldest first."""
    with crd_errors():
        found = await crd.list_endpoints(user_id=user_id)
    chosen = [e for e in found if phase is None or e.phase is phase]
    return sorted(chosen, key=_created)


def _created(endpoint: Endpoint) -> tuple[float, str]:
    created = endpoint.metadata.creation_timestamp
    return (0.0 if created is None else created.timestamp(), endpoint.name)


async def stop_endpoint(
    *, crd: AsyncClientBase, endpoint_id: str, request: StopEndpointRequest
) -> Endpoint:
    """Stopped with the reason (VRAM freed, application deleted); an ended endpoint as is."""
    with crd_errors(endpoint_id):
        endpoint = await crd.get_endpoint(endpoint_id)
        if endpoint.phase in (EndpointPhase.STOPPED, EndpointPhase.FAILED):
            return endpoint  # idempotent: nothing runs, nothing is held
        try:
            return await crd.set_endpoint_stopped(endpoint_id, request.reason, request.message)
        except Conflict:  # stopped (or failed) meanwhile by someone else: as it is now
            return await crd.get_endpoint(endpoint_id)


async def wake_endpoint(
    *,
    crd: AsyncClientBase,
    loop: SchedulingLoop,
    settled: SettledWait,
    endpoint_id: str,
    wait_s: float,
    quotas: QuotaBook | None = None,
    quota: UserQuotaModel | None = None,
) -> Endpoint:
    """Place a Stopped endpoint again and wait (bounded) until it runs; the view as it is.
    429 when what it holds once woken would take its user past ``quota``."""
    with crd_errors(endpoint_id):
        endpoint = await crd.get_endpoint(endpoint_id)
    if endpoint.phase is EndpointPhase.FAILED:
        raise EndpointFailed(endpoint_id=endpoint_id, reason=endpoint.status.reason)
    if endpoint.phase is EndpointPhase.STOPPED:
        if (
            endpoint.status.reason != EndpointStopReason.IDLE
        ):  # a call that saw it idle just before a stop
            raise EndpointStopped(endpoint_id=endpoint_id, reason=endpoint.status.reason)
        async with admitted(
            quotas,
            user_id=endpoint.spec.user_id,
            quota=quota,
            kind="endpoint",
            name=endpoint_id,
            holding=deployed_holding(endpoint),
        ):
            loop.wake_endpoint(endpoint)
    if endpoint.phase is not EndpointPhase.RUNNING and wait_s > 0:
        await settled(endpoint_id, wait_s, endpoint.metadata.resource_version)
        with crd_errors(endpoint_id):
            endpoint = await crd.get_endpoint(endpoint_id)
    return endpoint
