"""The job gateway tests' shared servers: one multi-node Ray for the session, metering."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.job_gateway.execution_factories import RayWorld, ray_test_cluster
from tests.job_gateway.metering_factories import Metering
from tests.metering_service.factories import metering_settings, running_metering
from tests.support.credit_server import CreditServer
from tests.support.postgres import PostgresTestServer


@pytest.fixture(scope="session")
def ray_world() -> Iterator[RayWorld]:
    """Three Ray nodes on this machine (slow to start on 2 cores: one per session)."""
    with ray_test_cluster() as world:
        yield world


@pytest.fixture(scope="module")
def metering(
    postgres: PostgresTestServer, credit: CreditServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Metering]:
    """metering_service on its own database, settling with the real credit_service."""
    database = postgres.create_database("gwmetering")
    settings = metering_settings(
        database, credit.url, state_dir=tmp_path_factory.mktemp("metering")
    )
    try:
        with running_metering(settings) as http:
            yield Metering(http, settings, credit, database)
    finally:
        postgres.drop_database(database)
