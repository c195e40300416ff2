"""A service's clients of other services: kept in app state, closed when the app stops."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import httpx
from fastapi import APIRouter, Depends

from gridweave_clients import AsyncInternalClient, InternalClient
from gridweave_clients.credit import CreditClient
from gridweave_runtime.app import create_service_app
from gridweave_runtime.clients import install_client, state_dependency
from gridweave_runtime.settings import ServiceSettings
from tests.support.credentials import service_auth
from tests.support.http_server import serve_in_thread

TOKEN = "clients-token-1d2c"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def test_installed_clients_are_served_to_routes_and_closed_at_shutdown(tmp_path: Path) -> None:
    blocking = CreditClient("http://127.0.0.1:9", TOKEN)
    awaited = AsyncInternalClient("http://127.0.0.1:9", TOKEN)
    router = APIRouter()

    @router.get("/which")
    async def which(
        credit: Annotated[CreditClient, Depends(state_dependency("credit", CreditClient))],
    ) -> dict[str, str]:
        return {"service": credit.service, "closed": str(credit.closed)}

    @router.get("/mistyped")
    async def mistyped(
        client: Annotated[InternalClient, Depends(state_dependency("other", InternalClient))],
    ) -> None:
        raise AssertionError("a mistyped client must not reach the route")

    settings = ServiceSettings(**service_auth(TOKEN), state_dir=tmp_path)
    app = create_service_app(service="caller", settings=settings, routers=[router])
    install_client(app, "credit", blocking)
    install_client(app, "other", awaited)
    with serve_in_thread(app) as url:
        served = httpx.get(f"{url}/which", headers=HEADERS)
        mistyped_answer = httpx.get(f"{url}/mistyped", headers=HEADERS)
        assert not blocking.closed and not awaited.closed

    assert served.json() == {"service": "credit_service", "closed": "False"}
    assert mistyped_answer.status_code == 500
    assert blocking.closed and awaited.closed
