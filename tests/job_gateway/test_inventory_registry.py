"""The node registry as an inventory: the wire model of GET /v1/nodes, through a test double."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from pydantic import ValidationError

from gridweave_clients import RetryPolicy
from gridweave_clients.nodes import NodeListResponse, NodeRegistryClient, NodeResponse
from job_gateway.inventory import (
    InventorySettings,
    InventoryUnavailable,
    NodeRegistrySource,
    inventory_from_nodes,
    open_inventory_source,
)
from tests.support.node_registry import TOKEN, FakeNodeRegistry, gpu, node


@pytest.fixture
def registry() -> FakeNodeRegistry:
    return FakeNodeRegistry(
        [
            node("worker-b", [gpu(1, "amd", 196_608), gpu(0, "amd", 196_608, cordoned=True)]),
            node(
                "worker-a",
                [gpu(0), gpu(1, healthy=False)],
                labels={"zone": "eu"},
                cpu_millis=32_000,
                memory_mb=131_072,
            ),
            node("worker-c", [gpu(0, "nvidia", 24_576)], status="NotReady"),
            node("worker-d", [gpu(0, "nvidia", 24_576)], cordoned=True),
        ]
    )


def _client(registry: FakeNodeRegistry, token: str = TOKEN) -> Iterator[NodeRegistryClient]:
    with NodeRegistryClient(
        "http://kuberay-service:8800",
        token,
        transport=registry.transport(),
        retry=RetryPolicy(attempts=1),
    ) as client:
        yield client


@pytest.fixture
def client(registry: FakeNodeRegistry) -> Iterator[NodeRegistryClient]:
    yield from _client(registry)


class TestInventoryFromTheRegistry:
    def test_nodes_gpus_liveness_and_cordons(
        self, registry: FakeNodeRegistry, client: NodeRegistryClient
    ) -> None:
        inventory = NodeRegistrySource(client).read_inventory()
        a, b, c, d = inventory.nodes
        assert [n.name for n in inventory.nodes] == ["worker-a", "worker-b", "worker-c", "worker-d"]
        assert a.labels == {"zone": "eu"} and a.ready
        assert (a.cpu_millis, a.memory_mb, b.cpu_millis) == (32_000, 131_072, None)
        assert [(g.index, g.schedulable) for g in a.gpus] == [(0, True), (1, False)]  # unhealthy
        assert [(g.index, g.vendor, g.schedulable) for g in b.gpus] == [
            (0, "amd", False),
            (1, "amd", True),
        ]
        assert not c.ready and c.gpus[0].schedulable
        assert d.ready and not d.gpus[0].schedulable  # the node's cordon
        assert not inventory.simulated
        (request,) = registry.requests
        assert (request.method, request.url.path) == ("GET", "/v1/nodes")
        assert request.headers["authorization"] == f"Bearer {TOKEN}"

    def test_the_settings_choose_it(self, client: NodeRegistryClient) -> None:
        source = open_inventory_source(
            InventorySettings(inventory_source="registry"), registry=client
        )
        assert isinstance(source, NodeRegistrySource)
        assert len(source.read_inventory().nodes) == 4

    def test_an_empty_registry(
        self, client: NodeRegistryClient, registry: FakeNodeRegistry
    ) -> None:
        registry.nodes = []
        assert NodeRegistrySource(client).read_inventory().nodes == ()


class TestUnavailable:
    def test_a_refused_token(self, registry: FakeNodeRegistry) -> None:
        for client in _client(registry, token="wrong"):
            with pytest.raises(InventoryUnavailable, match="could not be read"):
                NodeRegistrySource(client).read_inventory()

    def test_a_server_error(self, registry: FakeNodeRegistry, client: NodeRegistryClient) -> None:
        registry.status_code = 503
        with pytest.raises(InventoryUnavailable):
            NodeRegistrySource(client).read_inventory()

    def test_an_answer_not_understood(
        self, registry: FakeNodeRegistry, client: NodeRegistryClient
    ) -> None:
        registry.raw = {"nodes": [{"name": "x", "status": "Sleeping"}]}
        with pytest.raises(InventoryUnavailable, match="not understood"):
            NodeRegistrySource(client).read_inventory()

    def test_no_registry_at_all(self) -> None:
        def refuse(request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("connection refused", request=request)

        with NodeRegistryClient(
            "http://kuberay-service:8800",
            TOKEN,
            transport=httpx.MockTransport(refuse),
            retry=RetryPolicy(attempts=1),
        ) as client:
            with pytest.raises(InventoryUnavailable):
                NodeRegistrySource(client).read_inventory()


class TestWireModel:
    def test_unknown_fields_are_ignored(self) -> None:
        answer = NodeListResponse.model_validate(
            {
                "nodes": [
                    {
                        "name": "n",
                        "status": "Ready",
                        "rayWorkerGroup": "g",
                        "gpus": [
                            {"index": 0, "vendor": "amd", "model": "m", "vram_mb": 1, "temp": 40}
                        ],
                    }
                ],
                "next": None,
            }
        )
        assert inventory_from_nodes(answer).nodes[0].gpus[0].vram_mb == 1

    @pytest.mark.parametrize(
        ("gpus", "message"),
        [
            ([gpu(0), gpu(0)], "GPU indices repeat"),
            ([{"index": 0, "vendor": "intel", "model": "x", "vram_mb": 1}], "vendor"),
            ([{"index": 0, "vendor": "amd", "model": "x", "vram_mb": 0}], "vram_mb"),
        ],
    )
    def test_a_bad_node_is_refused(self, gpus: list[object], message: str) -> None:
        with pytest.raises(ValidationError, match=message):
            NodeResponse.model_validate({"name": "n", "status": "Ready", "gpus": gpus})

    def test_node_names_are_unique(self) -> None:
        with pytest.raises(ValidationError, match="node names repeat"):
            NodeListResponse(nodes=(node("n", []), node("n", [])))

    def test_the_double_answers_the_wire_model(self, registry: FakeNodeRegistry) -> None:
        assert NodeListResponse.model_validate(registry.answer()).nodes == tuple(registry.nodes)
