"""schemathesis over metering_service's OpenAPI: no 5xx for any generated input.

The real app on a real PostgreSQL database, called in process, calling the real
credit_service over HTTP; every 4xx is a Gridweave error body, and a 422 names each bad
field. Bounded (``max_examples`` per operation) so ``make test`` stays quick.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI

from metering_service.app import ROUTERS, create_app
from tests.metering_service.factories import metering_settings
from tests.support.credit_server import AUTH_HEADERS, CreditServer
from tests.support.fuzzing import (
    app_disposed,
    assert_gridweave_answer,
    fuzz_settings,
    openapi_document,
)

pytestmark = pytest.mark.postgres

schema = schemathesis.openapi.from_dict(openapi_document("metering_service", ROUTERS))


@pytest.fixture(scope="module")
def metering_app(
    metering_database: str, credit: CreditServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FastAPI]:
    """The real metering_service, calling the real credit_service, shared by the module."""
    state_dir = Path(tmp_path_factory.mktemp("metering-fuzz"))
    with app_disposed(
        create_app(metering_settings(metering_database, credit.url, state_dir=state_dir))
    ) as app:
        yield app


@schema.parametrize()
@fuzz_settings(100)
def test_no_server_error_and_bad_input_is_named(case: Any, metering_app: FastAPI) -> None:
    assert_gridweave_answer(case, case.call(app=metering_app, headers=AUTH_HEADERS))
