"""The node registry's fixtures: its database and the served kuberay-service, per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kuberay_service.node_factories import Registry, serve_registry
from tests.support.postgres import PostgresTestServer


@pytest.fixture(scope="module")
def database(postgres: PostgresTestServer) -> Iterator[str]:
    """A node registry database shared by the tests of one module."""
    with postgres.database("gwkuberay") as url:
        yield url


@pytest.fixture(scope="module")
def registry(database: str) -> Iterator[Registry]:
    """kuberay-service (real app, real HTTP) with its node registry on ``database``."""
    with serve_registry(database) as served:
        yield served
