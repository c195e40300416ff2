"""The supervisor's HTTP server (port 30501): ``/healthz``, ``/metrics``, collections.

``/healthz`` answers 200 while the registry answers its API (or a collection restarts it);
``/metrics`` carries the collections' figures; ``POST /v1/collections`` (a service credential)
collects garbage now and answers what was reclaimed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anyio import to_thread
from fastapi import APIRouter, FastAPI, Request

from gridweave_runtime.app import create_service_app
from gridweave_runtime.auth import callable_by
from registry_service.settings import RegistrySettings
from registry_service.supervisor import RegistrySupervisor

__all__ = ["create_app"]

router = APIRouter(tags=["registry"], dependencies=callable_by("admin"))


@router.post("/v1/collections")
async def collect_now(request: Request) -> dict[str, Any]:
    """Collect garbage now (the registry read-only meanwhile); what it reclaimed."""
    supervisor: RegistrySupervisor = request.app.state.supervisor
    result = await to_thread.run_sync(supervisor.collect)
    return {
        "reclaimed_bytes": result.reclaimed_bytes,
        "before_bytes": result.before_bytes,
        "after_bytes": result.after_bytes,
        "seconds": round(result.seconds, 3),
    }


def _healthy(app: FastAPI) -> bool:
    supervisor: RegistrySupervisor = app.state.supervisor
    return supervisor.healthy()


def create_app(settings: RegistrySettings, *, binary: Path) -> FastAPI:
    """The supervisor's app; its ``state.supervisor`` (not started) runs ``binary``."""
    app = create_service_app(
        service="registry_service", settings=settings, routers=[router], health_check=_healthy
    )
    app.state.supervisor = RegistrySupervisor(
        settings, binary=binary, metrics=app.state.metrics.registry
    )
    return app
