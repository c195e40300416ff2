"""schemathesis over the platform's OpenAPI: no 5xx for any generated input.

The real platform over HTTP, calling the real gateway (on the real apiserver), credit,
metering and faucet services; requests as an admin, so every route is reached. Every 4xx is
a Gridweave error body and a 422 names each bad field. Bounded (``max_examples`` per
operation) so ``make test`` stays quick.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from platform_service.app import ROUTERS
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, platform_settings, running_platform
from tests.support.credit_server import CreditServer
from tests.support.fuzzing import assert_gridweave_answer, openapi_document

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

schema = schemathesis.openapi.from_dict(openapi_document("platform_service", ROUTERS))


@pytest.fixture(scope="module")
def platform(
    platform_database: str,
    credit: CreditServer,
    gateway: GatewayServer,
    metering: httpx.Client,
    faucet: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PlatformServer]:
    """The platform with every service it calls."""
    settings = platform_settings(
        platform_database,
        tmp_path_factory.mktemp("platform-fuzz"),
        credit_service_url=credit.url,
        gateway_url=gateway.url,
        metering_service_url=str(metering.base_url),
        faucet_service_url=str(faucet.base_url),
        storage_dir=gateway.storage_dir,
        max_submission_bytes=100_000,
    )
    with running_platform(settings) as server:
        yield server


@schema.parametrize()
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_server_error_and_bad_input_is_named(case: Any, platform: PlatformServer) -> None:
    response = case.call(base_url=platform.url, headers=platform.admin.headers)
    assert_gridweave_answer(case, response)
