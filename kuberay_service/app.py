"""kuberay-service (port 8800): the wiring; routes in ``routers/``."""

from __future__ import annotations

from fastapi import FastAPI

from gridweave_controller import CrdClient
from gridweave_runtime.app import create_service_app
from kuberay_service.errors import install_status_error_handlers
from kuberay_service.routers import crd
from kuberay_service.settings import KubeRaySettings

__all__ = ["create_app"]


def create_app(
    settings: KubeRaySettings | None = None, *, crd_client: CrdClient | None = None
) -> FastAPI:
    """The kuberay-service app over ``crd_client`` (default: the cluster from the settings)."""
    settings = settings or KubeRaySettings()
    if crd_client is None:
        from gridweave_controller import crd as direct

        crd_client = direct.init_k8s_client(
            kubeconfig=settings.kubeconfig, namespace=settings.namespace
        )
    app = create_service_app(service="kuberay_service", settings=settings, routers=[crd.router])
    install_status_error_handlers(app)
    app.state.crd_client = crd_client
    return app
