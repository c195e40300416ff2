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


def _proxied(backend: CrdClient, name: str, stack: ExitStack) -> Transport:
    """job_gateway.crd_client -> HTTP -> kuberay-service (real port) -> ``backend``."""
    url = stack.enter_context(serve_in_thread(kuberay_app(backend)))
    crd_client.connect(url, TOKEN)
    stack.callback(crd_client.close)
    return Transport(name, crd_client, backend, backend.namespace)


@pytest.fixture(params=TRANSPORTS)
def transport(
    request: pytest.FixtureRequest, kube_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Transport]:
    """Each transport in turn, on a namespace of its own.

    ``mock`` and ``real`` call the typed client directly over the in-memory store and the
    real apiserver; ``proxied-mock`` and ``proxied-real`` put job_gateway.crd_client and
    kuberay-service (over real HTTP) in front of the same two stores.
    """
    name: str = request.param
    proxied = name.startswith("proxied-")
    with ExitStack() as stack:
        if name.endswith("mock"):
            mock_crd.reset()
            stack.callback(mock_crd.reset)
            client = mock_crd.init_k8s_client(namespace=kube_namespace)
            result = (
                _proxied(client, name, stack)
                if proxied
                else Transport(name, mock_crd, client, kube_namespace)
            )
            spy_memory_store(result, client.store, monkeypatch)
            yield result
            return
        kubeapi = request.getfixturevalue("kubeapi")
        if not kubeapi.started_here:
            stack.enter_context(namespace_on_cluster(kubeapi.kubeconfig, kube_namespace))
        client = crd.init_k8s_client(kubeconfig=kubeapi.kubeconfig, namespace=kube_namespace)
        assert isinstance(client.store, KubeStore)
        stack.callback(client.store.close)
        result = (
            _proxied(client, name, stack)
            if proxied
            else Transport(name, crd, client, kube_namespace)
        )
        spy_kube_store(result, client.store, monkeypatch)
        yield result
