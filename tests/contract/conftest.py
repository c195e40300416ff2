"""The ``transport`` fixture: every contract test runs once per transport.

To add a transport, add a parameter to ``TRANSPORTS`` in ``transports.py`` and a branch
here that initializes it on the test's namespace and counts the requests that reach the
store behind it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from gridweave_controller import CrdClient, crd
from gridweave_controller._kube_aio_store import AsyncKubeStore
from gridweave_controller._kube_store import KubeStore
from gridweave_controller.aio import AsyncCrdClient
from job_gateway import crd_client
from tests import mock_crd
from tests.contract.batched import BatchedFunctions
from tests.contract.transports import (
    TRANSPORTS,
    Transport,
    spy_kube_store,
    spy_memory_store,
)
from tests.support.http_server import serve_in_thread
from tests.support.kubeapi import namespace_for_test
from tests.support.kuberay_fixtures import TOKEN, kuberay_app, kuberay_cluster_app


def _proxied(
    url: str, name: str, backend: CrdClient, served_store: Any, stack: ExitStack
) -> Transport:
    """job_gateway.crd_client -> HTTP -> kuberay-service at ``url`` -> ``served_store``.

    ``backend`` is a typed client on the same store, for the tests' own reads.
    """
    if "batched" in name:
        functions = BatchedFunctions(url, TOKEN)
        stack.callback(functions.close)
        return Transport(name, functions, backend, backend.namespace, served_store)
    crd_client.connect(url, TOKEN)
    stack.callback(crd_client.close)
    return Transport(name, crd_client, backend, backend.namespace, served_store)


@pytest.fixture(params=TRANSPORTS)
def transport(
    request: pytest.FixtureRequest, kube_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Transport]:
    """Each transport in turn, on a namespace of its own.

    ``mock`` and ``real`` call the typed client directly over the in-memory store and the
    real apiserver; ``proxied-mock`` and ``proxied-real`` put job_gateway.crd_client and
    kuberay-service (over real HTTP) in front of the same two stores;
    ``proxied-batched-mock`` sends every write of the asyncio proxied client in a batch.
    """
    name: str = request.param
    proxied = name.startswith("proxied-")
    with ExitStack() as stack:
        if name.endswith("mock"):
            mock_crd.reset()
            stack.callback(mock_crd.reset)
            client = mock_crd.init_k8s_client(namespace=kube_namespace)
            store = mock_crd.STORE
            if proxied:
                url = stack.enter_context(serve_in_thread(kuberay_app(store, kube_namespace)))
                result = _proxied(url, name, client, store, stack)
            else:
                result = Transport(name, mock_crd, client, kube_namespace, store)
            spy_memory_store(result, store, monkeypatch)
            yield result
            return
        kubeapi = request.getfixturevalue("kubeapi")
        stack.enter_context(namespace_for_test(kubeapi, kube_namespace))
        client = crd.init_k8s_client(kubeconfig=kubeapi.kubeconfig, namespace=kube_namespace)
        assert isinstance(client.store, KubeStore)
        stack.callback(client.store.close)
        if not proxied:
            result = Transport(name, crd, client, kube_namespace, client.store)
            spy_kube_store(result, client.store.api_client.rest_client, monkeypatch)
            yield result
            return
        app = kuberay_cluster_app(kubeapi.kubeconfig, kube_namespace)
        url = stack.enter_context(serve_in_thread(app))
        served: AsyncCrdClient = app.state.crd_client  # connected as the server started
        assert isinstance(served.store, AsyncKubeStore)
        result = _proxied(url, name, client, served.store, stack)
        spy_kube_store(result, served.store.api_client.rest_client, monkeypatch)
        yield result
