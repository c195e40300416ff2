"""Session fixtures shared by the whole suite: the real servers the tests need."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.support.kubeapi import KubeAPI, KubeAPIUnavailable, kube_api, namespace_on_cluster
from tests.support.unavailable import fail_or_skip

pytest_plugins: list[str] = [
    "tests.support.postgres_fixtures",
    "tests.support.kuberay_fixtures",
    "tests.support.credit_server",
]


@pytest.fixture(scope="session")
def kubeapi() -> Iterator[KubeAPI]:
    """A real Kubernetes API server with the Gridweave CRDs installed (session scope)."""
    try:
        context = kube_api()
        api = context.__enter__()
    except KubeAPIUnavailable as exc:
        fail_or_skip("Kubernetes API server", exc)
    try:
        yield api
    finally:
        context.__exit__(None, None, None)


@pytest.fixture
def kube_namespace(request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of its own for one test.

    The local test apiserver serves only CRDs and needs no Namespace object; on an external
    cluster (``GRIDWEAVE_TEST_KUBECONFIG``) the namespace is created and deleted around the test.
    """
    name = f"gw-test-{uuid.uuid4().hex[:10]}"
    api: KubeAPI | None = None
    if "kubeapi" in request.fixturenames:
        api = request.getfixturevalue("kubeapi")
    if api is None or api.started_here:
        yield name
        return
    with namespace_on_cluster(api.kubeconfig, name):
        yield name
