"""Pytest plugin: the real-PostgreSQL fixtures (registered in ``tests/conftest.py``).

- ``postgres`` (session): a :class:`PostgresTestServer`, embedded unless
  ``GRIDWEAVE_TEST_DATABASE_URL`` is set; unavailable fails under ``CI=true``, else skips.
- ``postgres_database`` (function): the URL of a fresh empty database, dropped afterwards.
- ``postgres_module_database`` (module): the same, shared by one test module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres import PostgresTestServer, PostgresUnavailable, start_test_postgres
from tests.support.unavailable import entered_or_skip


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresTestServer]:
    """A real PostgreSQL server for the whole test session."""
    with entered_or_skip("PostgreSQL", start_test_postgres(), PostgresUnavailable) as server:
        yield server


@pytest.fixture
def postgres_database(postgres: PostgresTestServer) -> Iterator[str]:
    """A fresh, empty database for one test; yields its ``postgresql+psycopg://`` URL."""
    url = postgres.create_database()
    try:
        yield url
    finally:
        postgres.drop_database(url)


@pytest.fixture(scope="module")
def postgres_module_database(postgres: PostgresTestServer) -> Iterator[str]:
    """A fresh, empty database shared by the tests of one module."""
    url = postgres.create_database()
    try:
        yield url
    finally:
        postgres.drop_database(url)
