"""metering_service on a real PostgreSQL, talking to a real credit_service over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.metering_service.factories import metering_settings, running_metering
from tests.support.credit_server import CreditServer
from tests.support.postgres import PostgresTestServer


@pytest.fixture(scope="module")
def metering_database(postgres: PostgresTestServer) -> Iterator[str]:
    """An empty database for metering_service, shared by one test module."""
    url = postgres.create_database("gwmetering")
    try:
        yield url
    finally:
        postgres.drop_database(url)


@pytest.fixture(scope="module")
def metering(
    metering_database: str, credit: CreditServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    """The real metering_service (database migrated from empty) calling the real credit_service."""
    settings = metering_settings(
        metering_database, credit.url, state_dir=tmp_path_factory.mktemp("metering")
    )
    with running_metering(settings) as client:
        yield client
