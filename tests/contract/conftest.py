"""The ``transport`` fixture: every contract test runs once per transport.

To add a transport (the proxied ``job_gateway.crd_client``), add a parameter to
``TRANSPORTS`` in ``transports.py`` and a branch here that initializes it on the test's
namespace and counts its HTTP requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from gridweave_controller import crd
from gridweave_controller._kube_store import KubeStore
from tests import mock_crd
from tests.contract.transports import (
    TRANSPORTS,
    Transport,
    spy_kube_store,
    spy_memory_store,
)


@pytest.fixture(params=TRANSPORTS)
def transport(
    request: pytest.FixtureRequest, kube_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Transport]:
    """Each transport in turn, on a namespace of its own."""
    api: ModuleType
    if request.param == "mock":
        mock_crd.reset()
        api = mock_crd
        client = mock_crd.init_k8s_client(namespace=kube_namespace)
        result = Transport(request.param, api, client, kube_namespace)
        spy_memory_store(result, client.store, monkeypatch)
        yield result
        mock_crd.reset()
        return
    kubeapi = request.getfixturevalue("kubeapi")
    api = crd
    client = crd.init_k8s_client(kubeconfig=kubeapi.kubeconfig, namespace=kube_namespace)
    assert isinstance(client.store, KubeStore)
    result = Transport(request.param, api, client, kube_namespace)
    spy_kube_store(result, client.store, monkeypatch)
    try:
        yield result
    finally:
        client.store.close()
