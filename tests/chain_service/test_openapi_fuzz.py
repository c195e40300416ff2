"""schemathesis over chain_service's OpenAPI: no 5xx for any generated input.

The real app on a real PostgreSQL database, called in process; every 4xx is a Gridweave
error body, and a 422 names each bad field. Bounded (``max_examples`` per operation).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI

from chain_service.app import ROUTERS, create_app
from tests.chain_service.factories import chain_settings
from tests.support.credit_server import AUTH_HEADERS
from tests.support.fuzzing import (
    app_disposed,
    assert_gridweave_answer,
    fuzz_settings,
    openapi_document,
)

pytestmark = pytest.mark.postgres

schema = schemathesis.openapi.from_dict(openapi_document("chain_service", ROUTERS))


@pytest.fixture(scope="module")
def chain_app(
    postgres_module_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FastAPI]:
    """The real chain_service, shared by the module."""
    with app_disposed(
        create_app(chain_settings(postgres_module_database, tmp_path_factory.mktemp("fuzz")))
    ) as app:
        yield app


@schema.parametrize()
@fuzz_settings(50)
def test_no_server_error_and_bad_input_is_named(case: Any, chain_app: FastAPI) -> None:
    assert_gridweave_answer(case, case.call(app=chain_app, headers=AUTH_HEADERS))
