"""``/v1/endpoints``: create, read, list, stop (delete) and wake model endpoints."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from gridweave_clients.fields import UserId
from gridweave_clients.gateway.endpoints import (
    MAX_WAKE_SECONDS,
    CreateEndpointRequest,
    EndpointId,
    EndpointListResponse,
    EndpointLogsResponse,
    EndpointResponse,
    LogLines,
    StopEndpointRequest,
    WakeEndpointRequest,
)
from gridweave_controller.phases import EndpointPhase, EndpointStopReason
from gridweave_runtime.auth import callable_by
from gridweave_runtime.clients import state_dependency
from job_gateway.gateway import Gateway
from job_gateway.services import endpoint_logs, endpoints

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/endpoints", tags=["endpoints"], dependencies=callable_by("platform", "admin")
)
CurrentGateway = Annotated[Gateway, Depends(state_dependency("gateway", Gateway))]


@router.post("", status_code=201)
async def create_endpoint(body: CreateEndpointRequest, gateway: CurrentGateway) -> EndpointResponse:
    """Create the endpoint in Pending (422 naming the field, 409 for a taken id, 429 past the
    user's quota)."""
    endpoint = await endpoints.create_endpoint(
        crd=gateway.crd,
        scheduler=gateway.scheduler,
        request=body,
        endpoint_settings=gateway.endpoint_settings,
        quotas=gateway.quotas,
        settle_replaced=gateway.settle_replaced_endpoint,
    )
    return endpoints.endpoint_response(endpoint)


@router.get("")
async def list_endpoints(
    gateway: CurrentGateway,
    user_id: Annotated[UserId | None, Query()] = None,
    phase: Annotated[EndpointPhase | None, Query()] = None,
) -> EndpointListResponse:
    """A user's endpoints (or everyone's), optionally in one phase, oldest first."""
    found = await endpoints.list_endpoints(crd=gateway.crd, user_id=user_id, phase=phase)
    waking = gateway.loop.why_waking
    return EndpointListResponse(
        endpoints=[endpoints.endpoint_response(e, waking(e.name)) for e in found]
    )


@router.get("/{endpoint_id}")
async def get_endpoint(endpoint_id: EndpointId, gateway: CurrentGateway) -> EndpointResponse:
    """One endpoint (woken and waiting for a GPU: why, in ``waking_reason``)."""
    endpoint = await endpoints.get_endpoint(crd=gateway.crd, endpoint_id=endpoint_id)
    return endpoints.endpoint_response(endpoint, gateway.loop.why_waking(endpoint.name))


@router.get("/{endpoint_id}/logs")
async def get_endpoint_logs(
    endpoint_id: EndpointId, gateway: CurrentGateway, lines: Annotated[LogLines, Query()] = 200
) -> EndpointLogsResponse:
    """The last ``lines`` of each replica's stdout and stderr, read on the replica's node
    (running replicas first, then the latest ended ones, at most eight)."""
    return await endpoint_logs.read_endpoint_logs(
        crd=gateway.crd,
        app_prefix=(
            gateway.endpoint_settings.serve_app_prefix if gateway.reconciler is not None else None
        ),
        endpoint_id=endpoint_id,
        lines=lines,
    )


@router.delete("/{endpoint_id}")
async def delete_endpoint(endpoint_id: EndpointId, gateway: CurrentGateway) -> EndpointResponse:
    """Stop the endpoint (reason ``Deleted``): its VRAM freed, its replicas gone; idempotent."""
    endpoint = await endpoints.stop_endpoint(
        crd=gateway.crd,
        endpoint_id=endpoint_id,
        request=StopEndpointRequest(
            reason=EndpointStopReason.DELETED, message="deleted on request"
        ),
    )
    return endpoints.endpoint_response(endpoint)


@router.post("/{endpoint_id}/stop")
async def stop_endpoint(
    endpoint_id: EndpointId, body: StopEndpointRequest, gateway: CurrentGateway
) -> EndpointResponse:
    """Stop the endpoint with ``reason``; idempotent."""
    endpoint = await endpoints.stop_endpoint(crd=gateway.crd, endpoint_id=endpoint_id, request=body)
    return endpoints.endpoint_response(endpoint)


@router.post("/{endpoint_id}/wake")
async def wake_endpoint(
    endpoint_id: EndpointId,
    gateway: CurrentGateway,
    wait: Annotated[
        float,
        Query(ge=0, le=MAX_WAKE_SECONDS, description="Seconds to wait for it to run."),
    ] = 0,
    body: WakeEndpointRequest | None = None,
) -> EndpointResponse:
    """Deploy a Stopped endpoint again; with ``wait``, answered once it runs (or the wait
    ends: check the phase; still Stopped, ``waking_reason`` says why it waits). Concurrent
    wakes make one deployment. 429 when waking it would take its user past the body's
    quota (it stays Stopped)."""
    endpoint = await endpoints.wake_endpoint(
        crd=gateway.crd,
        loop=gateway.loop,
        settled=gateway.endpoint_settled,
        endpoint_id=endpoint_id,
        wait_s=wait,
        quotas=gateway.quotas,
        quota=None if body is None else body.quota,
    )
    return endpoints.endpoint_response(endpoint, gateway.loop.why_waking(endpoint.name))
