"""What every Gridweave service must answer a generated request (schemathesis tests)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from fastapi import APIRouter, FastAPI
from hypothesis import HealthCheck, settings

from gridweave_runtime.app import create_service_app
from gridweave_runtime.settings import ServiceSettings
from tests.support.credentials import service_auth

__all__ = ["app_disposed", "assert_gridweave_answer", "fuzz_settings", "openapi_document"]


def openapi_document(service: str, routers: Sequence[APIRouter]) -> dict[str, Any]:
    """The OpenAPI document of a service's routes, without opening its database.

    Available when the test module is collected (schemathesis parametrizes by it); the
    requests then go to the real app, built by a fixture on a real database.
    """
    settings = ServiceSettings(**service_auth("openapi-only"))
    return create_service_app(service=service, settings=settings, routers=routers).openapi()


def fuzz_settings(max_examples: int) -> settings:
    """Hypothesis's settings of a fuzz test: ``max_examples`` per operation (so ``make test``
    stays quick), no deadline (real servers answer), no health checks, and derandomized: the
    same examples each run."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )


@contextmanager
def app_disposed(app: FastAPI) -> Iterator[FastAPI]:
    """``app`` for the block; its database's connections closed after."""
    try:
        yield app
    finally:
        app.state.database.dispose()


def assert_gridweave_answer(case: Any, response: Any) -> None:
    """No 5xx; a 4xx is ``{"error": {"code", "message"}}``; a 422 names every bad field."""
    where = (case.method, case.path, response.status_code)
    assert response.status_code < 500, (*where, response.text)
    if not 400 <= response.status_code < 500:
        return
    body = response.json()
    error = body.get("error")
    assert isinstance(error, dict), (*where, body)
    assert error.get("code") and error.get("message"), (*where, body)
    if response.status_code == 422 and error["code"] == "invalid_request":
        fields = error.get("fields")
        assert fields, (*where, body)
        assert all(item.get("field") and item.get("message") for item in fields), (*where, body)
