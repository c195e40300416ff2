"""The platform when a service it calls is down: a 503 naming it, and no money left held."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.platform_service.factories import (
    PlatformServer,
    platform_settings,
    running_platform,
    submit_body,
)
from tests.support.credit_server import CreditServer

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def platform(
    platform_database: str,
    credit: CreditServer,
    metering: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PlatformServer]:
    """The platform with credit_service and metering up and nothing listening at the
    gateway's address."""
    settings = platform_settings(
        platform_database,
        tmp_path_factory.mktemp("platform"),
        credit_service_url=credit.url,
        metering_service_url=str(metering.base_url),
    )
    with running_platform(settings) as server:
        yield server


def test_an_unreachable_gateway_gives_the_hold_back(
    platform: PlatformServer, credit: CreditServer
) -> None:
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    response = platform.http.post("/v1/jobs", json=submit_body(), headers=user.headers)
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["service"] == "job_gateway" and "nothing was submitted" in error["message"]
    assert credit.account(user.user_id)["held"] == 0
    jobs = platform.storage_dir / "jobs"
    assert not jobs.exists() or not any(jobs.iterdir())


def test_reads_name_the_service_that_is_down(lone_platform: PlatformServer) -> None:
    """The platform alone: nothing listens at any service's address."""
    platform = lone_platform
    user = platform.new_user()
    for path, service in [
        ("/v1/jobs", "job_gateway"),
        ("/v1/nodes", "job_gateway"),
        ("/v1/usage", "metering_service"),
    ]:
        response = platform.http.get(path, headers=user.headers)
        assert response.status_code == 503, path
        assert response.json()["error"]["service"] == service
