"""Factories of the node registry tests: kuberay-service with its database, keys, bodies."""

from __future__ import annotations

import base64
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI

from gridweave_controller.aio import AsyncCrdClient
from kuberay_service.app import create_app
from kuberay_service.mesh import CommandRunner
from kuberay_service.reconciler import Reconciler
from kuberay_service.settings import KubeRaySettings
from tests.support.credentials import service_auth
from tests.support.http_server import serve_in_thread
from tests.support.kuberay_fixtures import TOKEN
from tests.support.memory_store import AsyncMemoryStore, MemoryStore

INTERNAL = {"Authorization": f"Bearer {TOKEN}"}
ADMIN = {**INTERNAL, "X-Gridweave-Role": "admin", "X-Gridweave-User": "ops@example.com"}
#: A credential acting as the gateway (the test's token may act as any role: it names one).
GATEWAY = {**INTERNAL, "X-Gridweave-Role": "gateway"}
MASTER_KEY = base64.b64encode(b"m" * 32).decode()
K3S_TOKEN = "k3s-join-token-for-tests"


def registry_settings(database_url: str, **overrides: Any) -> KubeRaySettings:
    """kuberay-service with the node registry on ``database_url`` and a configured mesh."""
    values: dict[str, Any] = {
        **service_auth(TOKEN),
        "database_url": database_url,
        "mesh_cidr": "10.88.0.0/16",
        "wireguard_endpoint": "203.0.113.10:51820",
        "wireguard_public_key": MASTER_KEY,
        "k3s_url": "https://10.88.0.1:6443",
        "k3s_token": K3S_TOKEN,
        "registry_address": "10.88.0.1:30500",
        "heartbeat_timeout_seconds": 600,
        "validate_rate_limit": 10_000,
        **overrides,
    }
    return KubeRaySettings.model_validate(values)


@dataclass(frozen=True)
class Registry:
    """A running kuberay-service with the node registry: its URL and settings."""

    url: str
    settings: KubeRaySettings
    app: FastAPI

    def client(self, headers: dict[str, str] | None = None) -> httpx.Client:
        """An HTTP client of the service sending ``headers`` (none: an unknown caller)."""
        return httpx.Client(base_url=self.url, headers=headers or {}, timeout=30)


@contextmanager
def serve_registry(
    database_url: str, *, mesh_runner: CommandRunner | None = None, **overrides: Any
) -> Iterator[Registry]:
    """kuberay-service (real app, real HTTP, real PostgreSQL) on a loopback port."""
    settings = registry_settings(database_url, **overrides)
    store = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gw")
    app = create_app(settings, crd_client=store, mesh_runner=mesh_runner)
    try:
        with serve_in_thread(app, settings) as url:
            yield Registry(url=url, settings=settings, app=app)
    finally:
        app.state.database.dispose()


def converges(reconciler: Reconciler, done: Callable[[], bool]) -> bool:
    """Whether ``done()`` holds after some pass of ``reconciler`` within 30 s (each pass
    is awaited: no polling)."""
    deadline = time.monotonic() + 30
    while not done():
        passes = reconciler.passes
        if time.monotonic() > deadline or not reconciler.wait_for_pass(passes, timeout=30):
            return False
    return True


def hostname() -> str:
    """A fresh node name, so tests sharing a database never collide."""
    return f"gpu-{uuid.uuid4().hex[:10]}"


def wg_public_key() -> str:
    """A WireGuard public key's form: base64 of 32 bytes."""
    return base64.b64encode(os.urandom(32)).decode()


def gpu(
    index: int, vendor: str = "nvidia", model: str = "NVIDIA A100 80GB", vram_mb: int = 81_920
) -> dict[str, Any]:
    """One GPU of a validation body."""
    return {"index": index, "vendor": vendor, "model": model, "vram_mb": vram_mb}


MIXED_GPUS = [
    gpu(0),
    gpu(1, model="NVIDIA GeForce RTX 4090", vram_mb=24_564),
    gpu(2, model="NVIDIA L4", vram_mb=23_034),
]


def validate_body(join_key: str, name: str | None = None, **overrides: Any) -> dict[str, Any]:
    """A validation request (three mixed NVIDIA GPUs by default)."""
    return {
        "join_key": join_key,
        "hostname": name or hostname(),
        "wireguard_public_key": wg_public_key(),
        "gpus": MIXED_GPUS,
        **overrides,
    }


def create_key(registry: Registry, **fields: Any) -> dict[str, Any]:
    """A new join key through the admin route; its answer (``key`` included)."""
    with registry.client(ADMIN) as http:
        response = http.post("/v1/nodes/join-keys", json=fields)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    return answer


def validate(registry: Registry, body: dict[str, Any]) -> httpx.Response:
    """``POST /v1/nodes/validate`` without any internal token."""
    with registry.client() as http:
        return http.post("/v1/nodes/validate", json=body)


def node_headers(token: str) -> dict[str, str]:
    """What a node sends on register, heartbeat and leave."""
    return {"Authorization": f"Bearer {token}"}


def join_node(registry: Registry, **key_fields: Any) -> tuple[str, dict[str, Any]]:
    """A node validated (with a new key of ``key_fields``) and registered, so Ready: its
    hostname and the validation answer."""
    key = create_key(registry, **key_fields)
    body = validate_body(key["key"])
    answer = validate(registry, body)
    assert answer.status_code == 200, answer.text
    with registry.client(node_headers(answer.json()["node_token"])) as http:
        assert http.post("/v1/nodes/register").status_code == 200
    return body["hostname"], answer.json()
