"""kuberay-service (port 8800): the wiring; routes in ``routers/``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from anyio import to_thread
from fastapi import FastAPI

from gridweave_controller import aio
from gridweave_controller.aio import AsyncCrdClient
from gridweave_controller.operations import CRD_PREFIX
from gridweave_runtime.app import create_service_app
from gridweave_runtime.database import Database
from kuberay_service.errors import install_status_error_handlers
from kuberay_service.mesh import CommandRunner
from kuberay_service.node_sync import NodeSync, build_node_sync
from kuberay_service.routers import crd, join_keys, nodes, watch
from kuberay_service.services.rate_limits import AddressRateLimiter
from kuberay_service.settings import DATABASE_NAME, KubeRaySettings

__all__ = ["MIGRATIONS_DIR", "create_app"]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def create_app(
    settings: KubeRaySettings | None = None,
    *,
    crd_client: AsyncCrdClient | None = None,
    mesh_runner: CommandRunner | None = None,
) -> FastAPI:
    """The kuberay-service app over ``crd_client`` (default: the cluster from the settings).

    Without ``crd_client`` the app connects to the cluster when it starts serving (the
    asyncio client belongs to the server's event loop) and closes the connection at shutdown.
    With ``settings.nodes_enabled`` (the default) the node registry is served too, its
    database opened and migrated first; the master's WireGuard peers
    (``settings.wireguard_interface``; ``wg`` run by ``mesh_runner``, default: on this host)
    and the RayCluster's worker groups (``settings.ray_cluster``) follow it while the app
    serves (``kuberay_service.node_sync``).
    """
    settings = settings or KubeRaySettings()

    @asynccontextmanager
    async def serving(app: FastAPI) -> AsyncIterator[None]:
        node_sync: NodeSync = app.state.node_sync
        node_sync.start()
        try:
            if crd_client is not None:
                yield
                return
            connected = await aio.connect(
                kubeconfig=settings.kubeconfig, namespace=settings.namespace
            )
            app.state.crd_client = connected
            try:
                yield
            finally:
                await connected.close()
        finally:
            await to_thread.run_sync(node_sync.stop)

    registry = settings.nodes_enabled
    app = create_service_app(
        service="kuberay_service",
        settings=settings,
        routers=[crd.router, watch.router] + ([join_keys.router, nodes.router] if registry else []),
        resources=serving,
        database=DATABASE_NAME if registry else None,
        migrations_dir=MIGRATIONS_DIR if registry else None,
        public_paths=nodes.NODE_PUBLIC_PATHS if registry else (),
        # the gateway's every CRD call: checked with its credential, no dependency to solve
        prefix_roles={CRD_PREFIX: crd.CRD_ROLES},
    )
    install_status_error_handlers(app)
    app.state.crd_client = crd_client
    app.state.validation_limiter = AddressRateLimiter(
        settings.validate_rate_limit, settings.validate_rate_window_seconds
    )
    database: Database | None = app.state.database
    app.state.node_sync = build_node_sync(settings, database, mesh_runner=mesh_runner)
    app.state.reconcilers = app.state.node_sync.reconcilers
    return app
