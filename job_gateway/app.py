"""job_gateway (port 8200): the wiring; routes in ``routers/``, rules in ``services/``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI

from gridweave_clients import RetryPolicy
from gridweave_clients.kuberay import AsyncProxiedClient
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.nodes import NodeRegistryClient
from gridweave_controller import aio
from gridweave_controller.aio import AsyncCrdClient
from gridweave_controller.operations import AsyncClientBase
from gridweave_runtime.app import create_service_app
from gridweave_runtime.storage import ObjectStore, open_object_store
from job_gateway.endpoints import EndpointSettings
from job_gateway.execution import ExecutionSettings
from job_gateway.gateway import Gateway
from job_gateway.inventory import InventorySettings, InventorySource, open_inventory_source
from job_gateway.metrics import GatewayMetrics
from job_gateway.routers import endpoints, inventory, jobs, shares
from job_gateway.settings import GatewaySettings

__all__ = ["ROUTERS", "create_app"]

#: Every route of the service.
ROUTERS = (jobs.router, jobs.reads, endpoints.router, inventory.router, shares.router)


async def connect_crd(settings: GatewaySettings) -> AsyncCrdClient | AsyncProxiedClient:
    """The CRD client the settings name: kuberay-service's /v1/crd, or the cluster itself."""
    if settings.crd_transport == "direct":
        return await aio.connect(kubeconfig=settings.kubeconfig, namespace=settings.namespace)
    return AsyncProxiedClient(settings.kuberay_url, settings.own_token())


def inventory_from_settings(settings: GatewaySettings) -> InventorySource:
    """The inventory source of ``GATEWAY_INVENTORY_SOURCE`` (the registry at KUBERAY_URL)."""
    chosen = InventorySettings()
    registry = None
    if chosen.inventory_source in ("registry", "local+registry"):
        token = settings.own_token()
        registry = NodeRegistryClient(settings.kuberay_url, token)
    return open_inventory_source(chosen, registry=registry)


def metering_from_settings(settings: GatewaySettings) -> AsyncMeteringClient:
    """metering_service at METERING_SERVICE_URL; one attempt a call (the reporter retries).

    The call times out in half a report's time, on its own: the report's bound (the CRD
    mark included) then never has to cancel a request midway.
    """
    return AsyncMeteringClient(
        settings.metering_service_url,
        settings.own_token(),
        timeout=settings.usage_report_timeout_seconds / 2,
        retry=RetryPolicy(attempts=1),
    )


def gateway_healthy(app: FastAPI) -> bool:
    """Serving, both informers listed, and the scheduling and usage loops running."""
    gateway: Gateway | None = getattr(app.state, "gateway", None)
    return gateway is not None and gateway.healthy()


def create_app(
    settings: GatewaySettings | None = None,
    *,
    crd_client: AsyncClientBase | None = None,
    inventory_source: InventorySource | None = None,
    store: ObjectStore | None = None,
    execution: ExecutionSettings | None = None,
    endpoint_settings: EndpointSettings | None = None,
) -> FastAPI:
    """The job_gateway app; its moving parts start when it starts serving.

    ``crd_client``, ``inventory_source`` and ``store`` replace what the settings name (a
    given client is not closed by the app); ``execution`` replaces ``GATEWAY_EXECUTE_JOBS``
    and the Ray settings read from the environment; ``endpoint_settings`` the
    ``GATEWAY_SERVE_*`` / ``GATEWAY_ENDPOINT_*`` ones.
    """
    settings = settings or GatewaySettings()

    @asynccontextmanager
    async def running_gateway(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            crd = crd_client
            if crd is None:
                connected = await connect_crd(settings)
                # aiohttp's graceful shutdown: a closed TLS connection to the apiserver needs
                # a moment on the loop before the loop closes (runs after the close below)
                stack.push_async_callback(asyncio.sleep, 0.25)
                stack.push_async_callback(connected.close)
                crd = connected
            metering = metering_from_settings(settings)
            stack.push_async_callback(metering.aclose)
            gateway = Gateway(
                settings,
                crd=crd,
                inventory_source=inventory_source or inventory_from_settings(settings),
                store=store or open_object_store(settings.storage_config()),
                execution=execution or ExecutionSettings(),
                metering=metering,
                metrics=app.state.gateway_metrics,
                endpoint_settings=endpoint_settings,
            )
            await gateway.start()
            stack.push_async_callback(gateway.stop)
            app.state.gateway = gateway
            yield

    app = create_service_app(
        service="job_gateway",
        settings=settings,
        routers=ROUTERS,
        resources=running_gateway,
        health_check=gateway_healthy,
    )
    # on the app's registry, once: the gateway may start again (a lifespan per serve)
    app.state.gateway_metrics = GatewayMetrics(app.state.metrics.registry)
    return app
