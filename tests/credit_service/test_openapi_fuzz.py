"""schemathesis over credit_service's OpenAPI: no 5xx for any generated input.

The real app on a real PostgreSQL database, called in process; every 4xx is a Gridweave
error body, and a 422 names each bad field. Bounded (``max_examples`` per operation) so
``make test`` stays quick; by hand, raise it (it found ids past BIGINT within 1,500 cases).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI

from credit_service.app import ROUTERS, create_app
from credit_service.settings import CreditSettings
from tests.credit_service.conftest import ADMIN, TOKEN
from tests.support.credentials import service_auth
from tests.support.fuzzing import (
    app_disposed,
    assert_gridweave_answer,
    fuzz_settings,
    openapi_document,
)

pytestmark = pytest.mark.postgres

schema = schemathesis.openapi.from_dict(openapi_document("credit_service", ROUTERS))


@pytest.fixture(scope="module")
def credit_app(
    postgres_module_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FastAPI]:
    """The real credit_service, its database migrated from empty, shared by the module."""
    settings = CreditSettings(
        database_url=postgres_module_database,
        **service_auth(TOKEN),
        state_dir=Path(tmp_path_factory.mktemp("credit-fuzz")),
    )
    with app_disposed(create_app(settings)) as app:
        yield app


@schema.parametrize()
@fuzz_settings(100)
def test_no_server_error_and_bad_input_is_named(case: Any, credit_app: FastAPI) -> None:
    assert_gridweave_answer(case, case.call(app=credit_app, headers=ADMIN))
