"""Session fixtures shared by the whole suite: the real servers the tests need."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.support.kubeapi import KubeAPI, KubeAPIUnavailable, kube_api, namespace_for_test
from tests.support.unavailable import entered_or_skip

pytest_plugins: list[str] = [
    "tests.support.postgres_fixtures",
    "tests.support.kuberay_fixtures",
    "tests.support.credit_server",
    "tests.support.ray_fixtures",
    "tests.support.parallel",
    "tests.support.reruns",
]


@pytest.fixture(scope="session")
def kubeapi() -> Iterator[KubeAPI]:
    """A real Kubernetes API server with the Gridweave CRDs installed (session scope)."""
    with entered_or_skip("Kubernetes API server", kube_api(), KubeAPIUnavailable) as api:
        yield api


@pytest.fixture
def kube_namespace(request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of its own for one test.

    When the test uses the ``kubeapi`` fixture the Namespace object is created (the API
    runs NamespaceLifecycle admission: no object lives in a missing namespace). It is
    deleted afterwards only on an external cluster (``GRIDWEAVE_TEST_KUBECONFIG``): the
    local API has no namespace controller, so a deleted namespace would only turn
    Terminating, and the whole server goes away after the session anyway. Fixtures that
    reach the API through ``request.getfixturevalue`` create it with
    ``namespace_for_test`` themselves.
    """
    name = f"gw-test-{uuid.uuid4().hex[:10]}"
    if "kubeapi" not in request.fixturenames:
        yield name
        return
    api: KubeAPI = request.getfixturevalue("kubeapi")
    with namespace_for_test(api, name):
        yield name
