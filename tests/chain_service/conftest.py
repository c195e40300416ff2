"""chain_service on a real PostgreSQL over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.chain_service.factories import chain_settings, running_chain
from tests.support.postgres import PostgresTestServer


@pytest.fixture
def chain_database(postgres: PostgresTestServer) -> Iterator[str]:
    """An empty database for chain_service, one per test (chains start at seq 1)."""
    url = postgres.create_database("gwchain")
    try:
        yield url
    finally:
        postgres.drop_database(url)


@pytest.fixture
def chain(chain_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """The real chain_service on its own fresh database (migrated from empty)."""
    settings = chain_settings(chain_database, tmp_path_factory.mktemp("chain"))
    with running_chain(settings) as client:
        yield client
