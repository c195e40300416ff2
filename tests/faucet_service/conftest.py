"""faucet_service on a real PostgreSQL, talking to a real credit_service over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.faucet_service.factories import faucet_settings, running_faucet
from tests.support.credit_server import CreditServer
from tests.support.postgres import PostgresTestServer


@pytest.fixture(scope="module")
def faucet_database(postgres: PostgresTestServer) -> Iterator[str]:
    """An empty database for faucet_service, shared by one test module."""
    with postgres.database("gwfaucet") as url:
        yield url


@pytest.fixture
def strict_database(postgres: PostgresTestServer) -> Iterator[str]:
    """A fresh faucet database of one test, for a faucet with low limits."""
    with postgres.database("gwfaucet") as url:
        yield url


@pytest.fixture(scope="module")
def faucet(
    faucet_database: str, credit: CreditServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    """The real faucet_service (database migrated from empty) calling the real credit_service."""
    settings = faucet_settings(
        faucet_database, credit.url, state_dir=tmp_path_factory.mktemp("faucet")
    )
    with running_faucet(settings) as client:
        yield client
