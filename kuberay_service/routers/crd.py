"""``/v1/crd``: the controller library's typed operations over HTTP.

Each route awaits one method of the app's :class:`~gridweave_controller.aio.AsyncCrdClient`
(the same typed flows ``gridweave_controller.crd`` runs, on the official asyncio client), so
phase rules, conditions and the read-modify-write loop run here, next to the cluster, on the
event loop: no worker thread per request. Objects travel as the raw Kubernetes
objects; errors as Status bodies (``kuberay_service.errors``). Every route needs the internal
service token, checked for every non-public path by the app's token middleware
(``gridweave_runtime.auth``) before any of this runs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse

from gridweave_controller import Endpoint, Job
from gridweave_controller.aio import AsyncCrdClient
from kuberay_service.schemas.crd import (
    CompleteJobRequest,
    CreateEndpointRequest,
    CreateJobRequest,
    EndpointHealthRequest,
    EndpointOutcomeRequest,
    EndpointRunningRequest,
    FailJobRequest,
    FinishJobRequest,
    PlacementRequest,
    RequeueJobRequest,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1/crd", tags=["crd"])


def served(request: Request) -> AsyncCrdClient:
    """The typed client this app serves (set by ``create_app`` or when it starts serving).

    Read from the app's state rather than injected as a dependency: FastAPI solves
    dependencies on every request, a measurable part of a proxied call's cost
    (docs/benchmarks.md).
    """
    client: AsyncCrdClient = request.app.state.crd_client
    return client


LabelSelector = Annotated[
    str | None, Query(alias="labelSelector", max_length=4096, description="Kubernetes selector")
]
UserFilter = Annotated[str | None, Query(alias="userId", max_length=253)]


def _object(item: Job | Endpoint, status_code: int = 200) -> JSONResponse:
    # The raw object goes out as it came from the apiserver: no re-validation, no re-encoding.
    return JSONResponse(item.raw, status_code=status_code)


def _list(kind: str, items: list[Job] | list[Endpoint]) -> JSONResponse:
    body = {"apiVersion": "gridweave.io/v1", "kind": f"{kind}List", "items": [i.raw for i in items]}
    return JSONResponse(body)


# -- jobs ---------------------------------------------------------------------------------


@router.post("/jobs", status_code=201)
async def create_job(body: CreateJobRequest, request: Request) -> JSONResponse:
    """Create a GridweaveJob in phase Pending."""
    return _object(
        await served(request).create_job(
            body.job_id,
            body.user_id,
            body.function_ref,
            vram_mb=body.vram_mb,
            gpu_count=body.gpu_count,
            vendor=body.vendor,
            owner=body.owner,
            timeout_seconds=body.timeout_seconds,
            max_retries=body.max_retries,
            labels=body.labels,
        ),
        status_code=201,
    )


@router.get("/jobs")
async def list_jobs(
    request: Request, label_selector: LabelSelector = None, user_id: UserFilter = None
) -> JSONResponse:
    """List jobs by label selector and user."""
    return _list("GridweaveJob", await served(request).list_jobs(label_selector, user_id=user_id))


@router.get("/jobs/{job_id}")
async def get_job(job_id: str, request: Request) -> JSONResponse:
    """Read one job."""
    return _object(await served(request).get_job(job_id))


@router.delete("/jobs/{job_id}", status_code=204)
async def delete_job(job_id: str, request: Request) -> Response:
    """Delete one job."""
    await served(request).delete_job(job_id)
    return Response(status_code=204)


@router.post("/jobs/{job_id}/allocated")
async def set_job_allocated(job_id: str, body: PlacementRequest, request: Request) -> JSONResponse:
    """Pending -> Allocated on a node and its GPU indices."""
    return _object(await served(request).set_job_allocated(job_id, body.node, body.gpu_indices))


@router.post("/jobs/{job_id}/running")
async def set_job_running(job_id: str, request: Request) -> JSONResponse:
    """Allocated -> Running."""
    return _object(await served(request).set_job_running(job_id))


@router.post("/jobs/{job_id}/completed")
async def set_job_completed(
    job_id: str, body: CompleteJobRequest, request: Request
) -> JSONResponse:
    """Running -> Completed."""
    return _object(
        await served(request).set_job_completed(job_id, body.wall_seconds, body.result_ref)
    )


@router.post("/jobs/{job_id}/failed")
async def set_job_failed(job_id: str, body: FailJobRequest, request: Request) -> JSONResponse:
    """Pending, Allocated or Running -> Failed."""
    return _object(
        await served(request).set_job_failed(job_id, body.reason, body.message, body.wall_seconds)
    )


@router.post("/jobs/{job_id}/cancelled")
async def set_job_cancelled(job_id: str, body: FinishJobRequest, request: Request) -> JSONResponse:
    """Pending, Allocated or Running -> Cancelled."""
    return _object(await served(request).set_job_cancelled(job_id, body.message, body.wall_seconds))


@router.post("/jobs/{job_id}/timed-out")
async def set_job_timed_out(job_id: str, body: FinishJobRequest, request: Request) -> JSONResponse:
    """Running -> TimedOut."""
    return _object(await served(request).set_job_timed_out(job_id, body.message, body.wall_seconds))


@router.post("/jobs/{job_id}/pending")
async def set_job_pending(job_id: str, body: RequeueJobRequest, request: Request) -> JSONResponse:
    """Allocated or Running -> Pending (requeue)."""
    return _object(await served(request).set_job_pending(job_id, body.reason, body.message))


# -- endpoints ----------------------------------------------------------------------------


@router.post("/endpoints", status_code=201)
async def create_endpoint(body: CreateEndpointRequest, request: Request) -> JSONResponse:
    """Create a GridweaveEndpoint in phase Pending."""
    return _object(
        await served(request).create_endpoint(
            body.endpoint_id,
            body.user_id,
            vram_mb=body.vram_mb,
            model=body.model,
            image=body.image,
            mode=body.mode,
            gpu_count=body.gpu_count,
            vendor=body.vendor,
            replicas=body.replicas,
            micro_credits_per_second=body.micro_credits_per_second,
            micro_credits_per_request=body.micro_credits_per_request,
            labels=body.labels,
        ),
        status_code=201,
    )


@router.get("/endpoints")
async def list_endpoints(
    request: Request, label_selector: LabelSelector = None, user_id: UserFilter = None
) -> JSONResponse:
    """List endpoints by label selector and user."""
    return _list(
        "GridweaveEndpoint", await served(request).list_endpoints(label_selector, user_id=user_id)
    )


@router.get("/endpoints/{endpoint_id}")
async def get_endpoint(endpoint_id: str, request: Request) -> JSONResponse:
    """Read one endpoint."""
    return _object(await served(request).get_endpoint(endpoint_id))


@router.delete("/endpoints/{endpoint_id}", status_code=204)
async def delete_endpoint(endpoint_id: str, request: Request) -> Response:
    """Delete one endpoint."""
    await served(request).delete_endpoint(endpoint_id)
    return Response(status_code=204)


@router.post("/endpoints/{endpoint_id}/deploying")
async def set_endpoint_deploying(
    endpoint_id: str, body: PlacementRequest, request: Request
) -> JSONResponse:
    """Pending, Running, Stopped or Failed -> Deploying."""
    return _object(
        await served(request).set_endpoint_deploying(endpoint_id, body.node, body.gpu_indices)
    )


@router.post("/endpoints/{endpoint_id}/running")
async def set_endpoint_running(
    endpoint_id: str, body: EndpointRunningRequest, request: Request
) -> JSONResponse:
    """Deploying -> Running at a URL."""
    return _object(await served(request).set_endpoint_running(endpoint_id, body.url))


@router.post("/endpoints/{endpoint_id}/stopped")
async def set_endpoint_stopped(
    endpoint_id: str, body: EndpointOutcomeRequest, request: Request
) -> JSONResponse:
    """Pending, Deploying or Running -> Stopped."""
    return _object(
        await served(request).set_endpoint_stopped(endpoint_id, body.reason, body.message)
    )


@router.post("/endpoints/{endpoint_id}/failed")
async def set_endpoint_failed(
    endpoint_id: str, body: EndpointOutcomeRequest, request: Request
) -> JSONResponse:
    """Pending, Deploying or Running -> Failed."""
    return _object(
        await served(request).set_endpoint_failed(endpoint_id, body.reason, body.message)
    )


@router.post("/endpoints/{endpoint_id}/health")
async def set_endpoint_health(
    endpoint_id: str, body: EndpointHealthRequest, request: Request
) -> JSONResponse:
    """Record a health probe."""
    return _object(
        await served(request).set_endpoint_health(
            endpoint_id, body.healthy, body.message, body.ready_replicas
        )
    )
