"""The gateway's registry inventory against the real ``GET /v1/nodes`` (kuberay-service on
a real PostgreSQL, over real HTTP): the wire model both sides share holds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gridweave_clients import RetryPolicy
from gridweave_clients.nodes import NodeRegistryClient
from job_gateway.inventory import InventoryUnavailable, NodeRegistrySource
from tests.kuberay_service.node_factories import (
    Registry,
    create_key,
    gpu,
    node_headers,
    serve_registry,
    validate,
    validate_body,
)
from tests.support.kuberay_fixtures import TOKEN
from tests.support.postgres import PostgresTestServer

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def registry(postgres: PostgresTestServer) -> Iterator[Registry]:
    with postgres.database("gwkuberay") as url, serve_registry(url) as served:
        yield served


def _join(registry: Registry, name: str, gpus: list[dict[str, object]], *, register: bool) -> str:
    body = validate_body(create_key(registry)["key"], name, gpus=gpus, labels={"zone": "eu"})
    token: str = validate(registry, body).json()["node_token"]
    if register:
        with registry.client(node_headers(token)) as http:
            assert http.post("/v1/nodes/register").status_code == 200
    return token


class TestInventoryFromTheRealRegistry:
    def test_nodes_gpus_liveness_and_health(self, registry: Registry) -> None:
        token = _join(
            registry,
            "worker-a",
            [gpu(1, model="NVIDIA L4", vram_mb=23_034), gpu(0)],
            register=True,
        )
        _join(registry, "worker-b", [gpu(0, "amd", "AMD Instinct MI300X", 196_608)], register=False)
        beat = {
            "gpus": [
                {"index": 1, "healthy": False, "free_vram_mb": 0},
                {"index": 0, "healthy": True, "free_vram_mb": 61_440},
            ]
        }
        with registry.client(node_headers(token)) as http:
            assert http.post("/v1/nodes/heartbeat", json=beat).status_code == 200
        with NodeRegistryClient(registry.url, TOKEN, retry=RetryPolicy(attempts=1)) as client:
            inventory = NodeRegistrySource(client).read_inventory()
        a, b = inventory.nodes
        assert (a.name, a.ready, a.labels) == ("worker-a", True, {"zone": "eu"})
        assert [(g.index, g.model, g.vram_mb, g.schedulable) for g in a.gpus] == [
            (0, "NVIDIA A100 80GB", 81_920, True),
            (1, "NVIDIA L4", 23_034, False),  # the heartbeat found it unhealthy
        ]
        # in use: what the heartbeat did not find free; an unhealthy GPU's 0 measures nothing
        assert [g.used_mb for g in a.gpus] == [81_920 - 61_440, None]
        assert (b.name, b.ready) == ("worker-b", False)  # validated, not joined
        assert [(g.vendor, g.vram_mb, g.used_mb) for g in b.gpus] == [("amd", 196_608, None)]
        assert not inventory.simulated

    def test_a_wrong_token_makes_it_unavailable(self, registry: Registry) -> None:
        with NodeRegistryClient(registry.url, "wrong", retry=RetryPolicy(attempts=1)) as client:
            with pytest.raises(InventoryUnavailable, match="a valid service token"):
                NodeRegistrySource(client).read_inventory()
