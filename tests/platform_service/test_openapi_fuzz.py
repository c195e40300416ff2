"""schemathesis over the platform's OpenAPI: no 5xx for any generated input.

The real platform over HTTP, calling the real gateway (on the real apiserver), credit,
metering and faucet services and a real Prometheus (the console's); requests as an admin,
so every route is reached. Every 4xx is a Gridweave error body and a 422 names each bad
field. Bounded (``max_examples`` per operation) so ``make test`` stays quick.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis

from platform_service.app import ROUTERS
from tests.platform_service.factories import PlatformServer
from tests.support.fuzzing import assert_gridweave_answer, fuzz_settings, openapi_document
from tests.support.prometheus import running_prometheus, started_or_skip

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

schema = schemathesis.openapi.from_dict(openapi_document("platform_service", ROUTERS))


@pytest.fixture(scope="module")
def platform_prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus (scraping nothing) for the platform: the console's route answers
    its charts, as it does wherever one is configured, rather than 503."""
    directory = tmp_path_factory.mktemp("prometheus")
    with started_or_skip(running_prometheus(directory, {})) as url:
        yield url


@schema.parametrize()
@fuzz_settings(10)
def test_no_server_error_and_bad_input_is_named(case: Any, platform: PlatformServer) -> None:
    response = case.call(base_url=platform.url, headers=platform.admin.headers)
    assert_gridweave_answer(case, response)
