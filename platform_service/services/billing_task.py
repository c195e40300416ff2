"""How the platform runs its money passes: endpoint billing (``endpoint_billing`` is what
each pass does), reading and stopping the endpoints through the gateway's HTTP API, and the
job hold sweeper (``job_hold_sweeper``); each a task of its event loop while it serves."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from contextlib import asynccontextmanager, suppress
from typing import Any

from fastapi import FastAPI

from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.gateway import endpoints as gateway_ops
from gridweave_clients.gateway.endpoints import EndpointResponse, StopEndpointRequest
from platform_service.services.endpoint_billing import (
    EndpointBilling,
    ListEndpoints,
    StopEndpoint,
)

__all__ = ["install_billing", "install_task", "over_gateway_api"]


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


def install_task(app: FastAPI, name: str, start: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``start()`` as a task of ``app``'s loop while it serves, cancelled at shutdown."""
    inner_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(wrapped: FastAPI) -> AsyncIterator[None]:
        async with inner_lifespan(wrapped):
            task = asyncio.create_task(start(), name=name)
            try:
                yield
            finally:
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task

    app.router.lifespan_context = lifespan
