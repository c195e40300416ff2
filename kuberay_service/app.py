"""kuberay-service (port 8800): the wiring; routes in ``routers/``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from gridweave_controller import aio
from gridweave_controller.aio import AsyncCrdClient
from gridweave_runtime.app import create_service_app
from kuberay_service.errors import install_status_error_handlers
from kuberay_service.routers import crd, watch
from kuberay_service.settings import KubeRaySettings

__all__ = ["create_app"]


def create_app(
    settings: KubeRaySettings | None = None, *, crd_client: AsyncCrdClient | None = None
) -> FastAPI:
    """The kuberay-service app over ``crd_client`` (default: the cluster from the settings).

    Without ``crd_client`` the app connects to the cluster when it starts serving (the
    asyncio client belongs to the server's event loop) and closes the connection at shutdown.
    """
    settings = settings or KubeRaySettings()

    @asynccontextmanager
    async def cluster_connection(app: FastAPI) -> AsyncIterator[None]:
        if crd_client is not None:
            yield
            return
        connected = await aio.connect(kubeconfig=settings.kubeconfig, namespace=settings.namespace)
        app.state.crd_client = connected
        try:
            yield
        finally:
            await connected.close()

    app = create_service_app(
        service="kuberay_service",
        settings=settings,
        routers=[crd.router, watch.router],
        resources=cluster_connection,
    )
    install_status_error_handlers(app)
    app.state.crd_client = crd_client
    return app
