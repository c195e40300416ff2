"""The job gateway tests' shared servers: one multi-node Ray for the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.job_gateway.execution_factories import RayWorld, ray_test_cluster


@pytest.fixture(scope="session")
def ray_world() -> Iterator[RayWorld]:
    """Three Ray nodes on this machine (slow to start on 2 cores: one per session)."""
    with ray_test_cluster() as world:
        yield world
