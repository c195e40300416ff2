"""Fixtures: kuberay-service on a real loopback port over the in-memory store."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi import FastAPI

from gridweave_controller import CrdClient
from kuberay_service.app import create_app
from kuberay_service.settings import KubeRaySettings
from tests.support.http_server import serve_in_thread
from tests.support.memory_store import MemoryStore

TOKEN = "test-internal-token-0123456789"


@dataclass(frozen=True)
class KubeRayServer:
    """A running kuberay-service: its URL, app and the store behind it."""

    url: str
    app: FastAPI
    store: MemoryStore


def kuberay_app(crd_client: CrdClient) -> FastAPI:
    """A kuberay-service app over ``crd_client`` with the test token."""
    settings = KubeRaySettings.model_validate({"internal_token": TOKEN})
    return create_app(settings, crd_client=crd_client)


@pytest.fixture
def kuberay() -> Iterator[KubeRayServer]:
    """kuberay-service over a fresh in-memory store, served on a loopback port."""
    store = MemoryStore()
    app = kuberay_app(CrdClient(store, "gridweave"))
    with serve_in_thread(app) as url:
        yield KubeRayServer(url=url, app=app, store=store)
