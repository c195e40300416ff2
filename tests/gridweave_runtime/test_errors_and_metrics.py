"""The one error-to-HTTP mapping, and per-app metrics that never collide."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, Field

from gridweave_runtime import GridweaveError, install_error_handlers, install_health_and_metrics

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio only."""
    return "asyncio"


class ThingMissing(GridweaveError):
    """A test error."""

    code = "thing_missing"
    status_code = 404
    message = "no such thing"


class ThingBody(BaseModel):
    """A body with one constrained field."""

    size: int = Field(gt=0)


def make_app() -> FastAPI:
    """A bare app raising each kind of error."""
    app = FastAPI()
    install_error_handlers(app)
    install_health_and_metrics(app, "test_service")

    @app.get("/missing")
    def missing() -> None:
        raise ThingMissing(thing_id=7)

    @app.post("/things")
    def create(body: ThingBody) -> dict[str, int]:
        return {"size": body.size}

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret internals")

    return app


async def get(app: FastAPI, method: str, path: str, **kwargs: object) -> httpx.Response:
    """One request to the in-process app."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        return await client.request(method, path, **kwargs)  # type: ignore[arg-type]


class TestErrorMapping:
    async def test_a_gridweave_error_carries_code_message_and_details(self) -> None:
        response = await get(make_app(), "GET", "/missing")
        assert response.status_code == 404
        assert response.json() == {
            "error": {"code": "thing_missing", "message": "no such thing", "thing_id": 7}
        }

    async def test_a_validation_error_names_the_field(self) -> None:
        response = await get(make_app(), "POST", "/things", json={"size": 0})
        assert response.status_code == 422
        body = response.json()["error"]
        assert body["code"] == "invalid_request"
        assert body["fields"][0]["field"] == "size"
        assert "size" in body["message"]

    async def test_the_unexpected_is_a_bare_500(self) -> None:
        response = await get(make_app(), "GET", "/boom")
        assert response.status_code == 500
        assert "secret" not in response.text


class TestMetrics:
    async def test_two_apps_keep_their_own_counts(self) -> None:
        first, second = make_app(), make_app()
        await get(first, "GET", "/missing")
        await get(first, "GET", "/missing")
        await get(second, "GET", "/healthz")
        first_metrics = (await get(first, "GET", "/metrics")).text
        second_metrics = (await get(second, "GET", "/metrics")).text
        line = (
            'gridweave_http_requests_total{method="GET",route="/missing",'
            'service="test_service",status="404"} 2.0'
        )
        assert line in first_metrics
        assert 'route="/missing"' not in second_metrics
        assert (await get(second, "GET", "/healthz")).json() == {"status": "ok"}
