"""A real service that misbehaves on demand, for the client base's tests.

It is built like every Gridweave service (``create_service_app``: the token middleware, the
one error mapping) and served on a loopback port; its routes count the requests they get,
answer slowly or with an error the first times, and raise each kind of error.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pytest
from fastapi import APIRouter, Depends, FastAPI, Query
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field

from gridweave_runtime.app import create_service_app
from gridweave_runtime.auth import Caller, require_internal_caller, require_role
from gridweave_runtime.errors import GridweaveError, InvalidRequest, error_body
from gridweave_runtime.settings import ServiceSettings
from tests.platform_service.admin_stack import (  # noqa: F401  (the admins' stack)
    admin_platform,
    file_platform,
    registry_gateway,
)
from tests.platform_service.conftest import node_registry, platform_database  # noqa: F401
from tests.support.credentials import service_auth
from tests.support.http_server import serve_in_thread

TOKEN = "probe-token-7f3a"


@dataclass
class Probe:
    """The probe service's URL and the requests each of its keyed routes received."""

    url: str
    counts: Counter[str] = field(default_factory=Counter)


class _Refusal(GridweaveError):
    """An error of any status the test names."""

    def __init__(self, status_code: int, code: str, **details: Any) -> None:
        self.status_code = status_code
        self.code = code
        super().__init__(f"refused with {code}", **details)


class _Amounts(BaseModel):
    amount: int = Field(gt=0)
    note: str


_REFUSALS: dict[str, tuple[int, str, dict[str, Any]]] = {
    "not_found": (404, "widget_not_found", {"widget_id": "w-1"}),
    "payment": (402, "insufficient_funds", {"available": 5, "needed": 9}),
    "conflict": (409, "widget_busy", {}),
    "gone": (410, "code_expired", {}),
    "rate": (429, "rate_limited", {"window_seconds": 60}),
    "teapot": (418, "teapot", {}),
}


def _router(probe: Probe) -> APIRouter:
    router = APIRouter(prefix="/v1")

    @router.get("/echo")
    async def echo(caller: Annotated[Caller, Depends(require_internal_caller)]) -> dict[str, Any]:
        return {"user": caller.user_id, "role": caller.role}

    @router.api_route("/slow/{key}", methods=["GET", "POST"])
    async def slow(key: str, delay: float = 1.0, times: int = 1) -> dict[str, int]:
        probe.counts[key] += 1
        if probe.counts[key] <= times:
            await asyncio.sleep(delay)
        return {"attempt": probe.counts[key]}

    @router.api_route("/flaky/{key}", methods=["GET", "POST"])
    async def flaky(key: str, status: int = 503, times: int = 1) -> Any:
        probe.counts[key] += 1
        if probe.counts[key] <= times:
            return JSONResponse(error_body("flaky", "not this time"), status_code=status)
        return {"attempt": probe.counts[key]}

    @router.get("/refusals/{kind}")
    async def refusal(kind: str) -> None:
        status, code, details = _REFUSALS[kind]
        raise _Refusal(status, code, **details)

    @router.get("/invalid")
    async def invalid() -> None:
        raise InvalidRequest("to_user_id", "a transfer needs two different accounts")

    @router.post("/validated")
    async def validated(body: _Amounts, limit: Annotated[int, Query(ge=1)] = 1) -> _Amounts:
        return body

    @router.get("/admin-only")
    async def admin_only(caller: Annotated[Caller, Depends(require_internal_caller)]) -> None:
        require_role(caller, "admin")

    @router.get("/crash")
    async def crash() -> None:
        raise RuntimeError("a bug")

    @router.get("/not-json")
    async def not_json() -> Any:
        return PlainTextResponse("{not json")

    return router


def _probe_app(probe: Probe, state_dir: Path) -> FastAPI:
    settings = ServiceSettings(**service_auth(TOKEN), state_dir=state_dir)
    return create_service_app(service="probe", settings=settings, routers=[_router(probe)])


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probe]:
    """The probe service on a loopback port (its counts are shared by one test module)."""
    holder = Probe(url="")
    with serve_in_thread(_probe_app(holder, tmp_path_factory.mktemp("probe"))) as url:
        holder.url = url
        yield holder
