"""``/v1/endpoints``: deploy, read, list, stop the caller's endpoints; call them.

``/v1/endpoints/{name}/{path}`` (any method) is the endpoint itself, proxied (an OpenAI
client's ``base_url`` is ``<platform>/v1/endpoints/{name}/v1``). ``-/...`` paths are never
proxied (the replicas' own routes); ``/v1/endpoints/{name}/-/stats`` is the platform's figures
of the calls the endpoint took, ``/v1/endpoints/{name}/-/logs`` its replicas' output.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.responses import Response

from gridweave_clients.platform.endpoints import (
    DeployEndpointRequest,
    EndpointListResponse,
    EndpointLogsResponse,
    EndpointName,
    EndpointResponse,
    EndpointStatsResponse,
    LogLines,
)
from gridweave_runtime.clients import state_dependency
from platform_service.routers.common import QuotaDep, UserDep
from platform_service.services import endpoint_logs, endpoints
from platform_service.services.endpoint_proxy import EndpointProxy
from platform_service.services.endpoints import EndpointServices

__all__ = ["PROXIED_METHODS", "router"]

router = APIRouter(prefix="/v1/endpoints", tags=["endpoints"])
ServicesDep = Annotated[EndpointServices, Depends(state_dependency("endpoints", EndpointServices))]
ProxyDep = Annotated[EndpointProxy, Depends(state_dependency("endpoint_proxy", EndpointProxy))]
NamePath = Annotated[EndpointName, Path()]
#: The methods a call to an endpoint may use.
PROXIED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


@router.post("", status_code=201, operation_id="deploy_endpoint")
async def deploy_endpoint(
    body: DeployEndpointRequest, user: UserDep, services: ServicesDep, quota: QuotaDep
) -> EndpointResponse:
    """Deploy a model or a class (402 without the credits of its first holds: two billing
    periods at max_replicas; 409 a name in service: an endpoint Failed or Stopped other
    than Idle is replaced; 422 naming the field: no GPU could hold it, vllm without a GPU)."""
    return await endpoints.deploy_endpoint(services, user=user, request=body, quota=quota)


@router.get("", operation_id="list_endpoints")
async def list_endpoints(user: UserDep, services: ServicesDep) -> EndpointListResponse:
    """The caller's endpoints, oldest first."""
    return await endpoints.list_endpoints(services, user_id=user.user_id)


@router.get("/{name}", operation_id="get_endpoint")
async def get_endpoint(name: NamePath, user: UserDep, services: ServicesDep) -> EndpointResponse:
    """One of the caller's endpoints (another user's is 404)."""
    endpoint = await endpoints.get_own_endpoint(services, user_id=user.user_id, name=name)
    return await endpoints.endpoint_view(services, endpoint)


@router.delete("/{name}", operation_id="stop_endpoint")
async def stop_endpoint(name: NamePath, user: UserDep, services: ServicesDep) -> EndpointResponse:
    """Stop the endpoint: its GPUs freed, its usage settled (repeated: no change)."""
    return await endpoints.stop_endpoint(services, user_id=user.user_id, name=name)


@router.get("/{name}/-/stats", operation_id="get_endpoint_stats")
async def get_endpoint_stats(
    name: NamePath, user: UserDep, services: ServicesDep, proxy: ProxyDep
) -> EndpointStatsResponse:
    """The calls one of the caller's endpoints took through this platform process (requests,
    status classes, latency p50/p90/p99, cold starts); in memory, reset on restart. Another
    user's endpoint is 404."""
    await endpoints.get_own_endpoint(services, user_id=user.user_id, name=name)
    return proxy.stats.snapshot(user_id=user.user_id, name=name)


@router.get("/{name}/-/logs", operation_id="get_endpoint_logs")
async def get_endpoint_logs(
    name: NamePath,
    user: UserDep,
    services: ServicesDep,
    lines: Annotated[LogLines, Query()] = 200,
) -> EndpointLogsResponse:
    """The last ``lines`` of each replica's stdout and stderr: the running replicas first, then
    the latest ended ones (a stopped endpoint's, while their node keeps the files). The text
    is the endpoint's own output. Another user's endpoint is 404."""
    return await endpoint_logs.get_endpoint_logs(
        services, user_id=user.user_id, name=name, lines=lines
    )


async def call_endpoint(
    name: NamePath, path: str, request: Request, user: UserDep, proxy: ProxyDep
) -> Response:
    """Call the endpoint: ``path`` on its server, the answer streamed back; a scaled-to-zero
    endpoint is woken first (402 out of credits, 409 stopped, 503 failed or not started)."""
    return await proxy.forward(
        user_id=user.user_id,
        name=name,
        method=request.method,
        path=path,
        query=request.url.query,
        headers=request.headers,
        body=await request.body(),
    )


for _method in PROXIED_METHODS:
    router.add_api_route(
        "/{name}/{path:path}",
        call_endpoint,
        methods=[_method],
        operation_id=f"call_endpoint_{_method.lower()}",
        response_class=Response,
    )
