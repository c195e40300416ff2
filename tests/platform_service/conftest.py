"""The platform on a real PostgreSQL database of its own, one per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres import PostgresTestServer


@pytest.fixture(scope="module")
def platform_database(postgres: PostgresTestServer) -> Iterator[str]:
    """An empty database for platform_service, shared by one test module."""
    url = postgres.create_database("gwplatform")
    try:
        yield url
    finally:
        postgres.drop_database(url)
