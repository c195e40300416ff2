"""Fixtures: kuberay-service on a real loopback port over the in-memory store."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI

from gridweave_controller.aio import AsyncCrdClient
from kuberay_service.app import create_app
from kuberay_service.settings import KubeRaySettings
from tests.support.credentials import service_auth
from tests.support.http_server import serve_in_thread
from tests.support.memory_store import AsyncMemoryStore, MemoryStore

TOKEN = "test-internal-token-0123456789"


@dataclass(frozen=True)
class KubeRayServer:
    """A running kuberay-service: its URL, app and the store behind it."""

    url: str
    app: FastAPI
    store: MemoryStore


def kuberay_app(store: MemoryStore, namespace: str = "gridweave") -> FastAPI:
    """A kuberay-service app over the in-memory ``store``, with the test token.

    ``/v1/crd`` only: the node registry (and its database) is off; its tests open it.
    """
    settings = KubeRaySettings.model_validate({**service_auth(TOKEN), "nodes_enabled": False})
    return create_app(settings, crd_client=AsyncCrdClient(AsyncMemoryStore(store), namespace))


def kuberay_cluster_app(kubeconfig: Path, namespace: str) -> FastAPI:
    """A kuberay-service app that connects to the cluster of ``kubeconfig`` when it starts."""
    settings = KubeRaySettings.model_validate(
        {
            **service_auth(TOKEN),
            "kubeconfig": kubeconfig,
            "namespace": namespace,
            "nodes_enabled": False,
        }
    )
    return create_app(settings)


@pytest.fixture
def kuberay() -> Iterator[KubeRayServer]:
    """kuberay-service over a fresh in-memory store, served on a loopback port."""
    store = MemoryStore()
    app = kuberay_app(store)
    with serve_in_thread(app) as url:
        yield KubeRayServer(url=url, app=app, store=store)
