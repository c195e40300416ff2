"""schemathesis over metering_service's OpenAPI: no 5xx for any generated input.

The real metering_service over HTTP, on a real PostgreSQL database, calling the real
credit_service over HTTP (served, so its async credit client keeps one event loop, as in
production); every 4xx is a Gridweave error body, and a 422 names each bad field.
Bounded (``max_examples`` per operation) so ``make test`` stays quick.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis

from metering_service.app import ROUTERS
from tests.support.fuzzing import assert_gridweave_answer, fuzz_settings, openapi_document

pytestmark = pytest.mark.postgres

schema = schemathesis.openapi.from_dict(openapi_document("metering_service", ROUTERS))


@schema.parametrize()
@fuzz_settings(100)
def test_no_server_error_and_bad_input_is_named(case: Any, metering: httpx.Client) -> None:
    response = case.call(base_url=str(metering.base_url), headers=dict(metering.headers))
    assert_gridweave_answer(case, response)
