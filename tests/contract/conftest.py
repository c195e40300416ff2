"""The ``transport`` fixture: every contract test runs once per transport.

To add a transport, add a parameter to ``TRANSPORTS`` in ``transports.py`` and a branch
here that initializes it on the test's namespace and counts the requests that reach the
store behind it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from gridweave_controller import CrdClient, crd
from gridweave_controller._kube_store import KubeStore
from job_gateway import crd_client
from tests import mock_crd
from tests.contract.transports import (
    TRANSPORTS,
    Transport,
    spy_kube_store,
    spy_memory_store,
)
from tests.support.http_server import serve_in_thread
from tests.support.kubeapi import namespace_on_cluster
from tests.support.kuberay_fixtures import TOKEN, kuberay_app
from tests.support.memory_store import MemoryStore


@pytest.fixture(params=TRANSPORTS)
def transport(
    request: pytest.FixtureRequest, kube_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Transport]:
    """Each transport in turn, on a namespace of its own."""
    if request.param == "mock":
        mock_crd.reset()
        client = mock_crd.init_k8s_client(namespace=kube_namespace)
        result = Transport(request.param, mock_crd, client, kube_namespace)
        spy_memory_store(result, client.store, monkeypatch)
        yield result
        mock_crd.reset()
        return
    if request.param == "proxied":
        # job_gateway.crd_client -> HTTP -> kuberay-service -> CrdClient -> in-memory store.
        store = MemoryStore()
        backend = CrdClient(store, kube_namespace)
        with serve_in_thread(kuberay_app(backend)) as url:
            crd_client.connect(url, TOKEN)
            result = Transport(request.param, crd_client, backend, kube_namespace)
            spy_memory_store(result, store, monkeypatch)
            try:
                yield result
            finally:
                crd_client.close()
        return
    kubeapi = request.getfixturevalue("kubeapi")
    with ExitStack() as stack:
        if not kubeapi.started_here:
            stack.enter_context(namespace_on_cluster(kubeapi.kubeconfig, kube_namespace))
        client = crd.init_k8s_client(kubeconfig=kubeapi.kubeconfig, namespace=kube_namespace)
        assert isinstance(client.store, KubeStore)
        stack.callback(client.store.close)
        result = Transport(request.param, crd, client, kube_namespace)
        spy_kube_store(result, client.store, monkeypatch)
        yield result
