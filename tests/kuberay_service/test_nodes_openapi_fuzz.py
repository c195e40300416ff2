"""schemathesis over the node registry's routes (join keys, validate, register, heartbeat,
leave, list, remove): no 5xx for any generated input, on the real app and PostgreSQL, as an
admin; every refusal is a Kubernetes Status that names what was wrong."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI

from gridweave_controller.aio import AsyncCrdClient
from kuberay_service.app import create_app
from kuberay_service.routers import join_keys, nodes
from tests.kuberay_service.node_factories import ADMIN, registry_settings
from tests.support.fuzzing import app_disposed, fuzz_settings, openapi_document
from tests.support.memory_store import AsyncMemoryStore, MemoryStore

schema = schemathesis.openapi.from_dict(
    openapi_document("kuberay_service", [join_keys.router, nodes.router])
)

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def registry_app(database: str) -> Iterator[FastAPI]:
    crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gw")
    with app_disposed(create_app(registry_settings(database), crd_client=crd)) as app:
        yield app


@schema.parametrize()
@fuzz_settings(30)
def test_no_server_error_and_bad_input_is_named(case: Any, registry_app: FastAPI) -> None:
    response = case.call(app=registry_app, headers=ADMIN)
    where = (case.method, case.path, response.status_code)
    assert response.status_code < 500, (*where, response.text)
    if 400 <= response.status_code < 500:
        body = response.json()
        assert body.get("kind") == "Status" and body["message"], (*where, body)
        if body["reason"] in ("Invalid", "JoinKeyLimit"):
            causes = body.get("details", {}).get("causes", [])
            assert causes and all(cause.get("field") for cause in causes), (*where, body)
