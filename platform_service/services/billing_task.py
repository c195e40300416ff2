"""How the platform runs endpoint billing (``endpoint_billing`` is what each pass does),
reading and stopping the endpoints through the gateway's HTTP API: a task of its event loop
while it serves (``gridweave_runtime.tasks``)."""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import FastAPI

from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.gateway import endpoints as gateway_ops
from gridweave_clients.gateway.endpoints import EndpointResponse, StopEndpointRequest
from gridweave_runtime.tasks import install_task
from platform_service.services.endpoint_billing import (
    EndpointBilling,
    ListEndpoints,
    StopEndpoint,
)

__all__ = ["install_billing", "over_gateway_api"]


def over_gateway_api(gateway: AsyncGatewayClient) -> tuple[ListEndpoints, StopEndpoint]:
    """Listing and stopping through the gateway's HTTP API (billing outside the gateway)."""

    async def list_endpoints() -> Iterable[EndpointResponse]:
        return (await gateway.run(gateway_ops.list_endpoints())).endpoints

    async def stop(endpoint_id: str, reason: str, message: str) -> EndpointResponse:
        request = StopEndpointRequest(reason=reason, message=message[:1024])
        return await gateway.run(gateway_ops.stop_endpoint(endpoint_id, request))

    return list_endpoints, stop


def install_billing(
    app: FastAPI,
    billing: EndpointBilling,
    list_endpoints: ListEndpoints,
    *,
    interval_seconds: float,
) -> None:
    """Run ``billing`` every ``interval_seconds`` while ``app`` serves (a task of its loop)."""
    install_task(
        app,
        "endpoint-billing",
        lambda: billing.run(list_endpoints, interval_seconds=interval_seconds),
    )
