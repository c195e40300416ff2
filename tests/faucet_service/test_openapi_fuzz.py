"""schemathesis over faucet_service's OpenAPI: no 5xx for any generated input.

The real app on a real PostgreSQL database, called in process (as an admin, so the outbox
answers too), calling the real credit_service over HTTP; every 4xx is a Gridweave error
body, and a 422 names each bad field. Bounded (``max_examples`` per operation) so
``make test`` stays quick.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI

from faucet_service.app import ROUTERS, create_app
from tests.faucet_service.factories import ADMIN_HEADERS, faucet_settings
from tests.support.credit_server import CreditServer
from tests.support.fuzzing import (
    app_disposed,
    assert_gridweave_answer,
    fuzz_settings,
    openapi_document,
)

pytestmark = pytest.mark.postgres

schema = schemathesis.openapi.from_dict(openapi_document("faucet_service", ROUTERS))


@pytest.fixture(scope="module")
def faucet_app(
    faucet_database: str, credit: CreditServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FastAPI]:
    """The real faucet_service, calling the real credit_service, shared by the module."""
    state_dir = Path(tmp_path_factory.mktemp("faucet-fuzz"))
    with app_disposed(
        create_app(faucet_settings(faucet_database, credit.url, state_dir=state_dir))
    ) as app:
        yield app


@schema.parametrize()
@fuzz_settings(100)
def test_no_server_error_and_bad_input_is_named(case: Any, faucet_app: FastAPI) -> None:
    assert_gridweave_answer(case, case.call(app=faucet_app, headers=ADMIN_HEADERS))
