"""The session's multi-node Ray (the job gateway's execution tests and the SDK's Ray tests).

One per session: Ray is slow to start on small machines, and a process connects to one Ray.
``ray`` is imported only when a test asks for the fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.job_gateway.execution_factories import RayWorld


@pytest.fixture(scope="session")
def ray_world() -> Iterator[RayWorld]:
    """Three Ray nodes on this machine (slow to start on 2 cores: one per session)."""
    from tests.job_gateway.execution_factories import ray_test_cluster

    with ray_test_cluster() as world:
        yield world
