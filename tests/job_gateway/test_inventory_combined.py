"""This machine and the joined nodes as one inventory (``local+registry``): what the
all-in-one's gateway places on once GPU owners join their machines to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gridweave_clients import RetryPolicy
from gridweave_clients.nodes import NodeRegistryClient
from job_gateway.inventory import (
    Gpu,
    Inventory,
    InventorySettings,
    InventoryUnavailable,
    Node,
    NodeRegistrySource,
    open_inventory_source,
)
from job_gateway.inventory.combined import CombinedSource
from tests.support.node_registry import TOKEN, FakeNodeRegistry, gpu, node


class _Fixed:
    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory

    def read_inventory(self) -> Inventory:
        return self.inventory


HEAD = Inventory(
    nodes=(
        Node(
            name="head",
            gpus=(Gpu(node="head", index=0, vendor="nvidia", model="Sim", vram_mb=16384),),
        ),
    )
)


@pytest.fixture
def registry() -> FakeNodeRegistry:
    return FakeNodeRegistry(
        [
            node("worker-a", [gpu(0, "nvidia", 24_576)]),
            node("head", [gpu(0, "nvidia", 81_920)]),  # a joined node named as the head
            node("worker-b", [gpu(0, "amd", 196_608)], status="NotReady"),
        ]
    )


@pytest.fixture
def client(registry: FakeNodeRegistry) -> Iterator[NodeRegistryClient]:
    with NodeRegistryClient(
        "http://kuberay-service:8800",
        TOKEN,
        transport=registry.transport(),
        retry=RetryPolicy(attempts=1),
    ) as made:
        yield made


class TestCombinedSource:
    def test_the_head_first_then_the_joined_nodes(self, client: NodeRegistryClient) -> None:
        inventory = CombinedSource(_Fixed(HEAD), NodeRegistrySource(client)).read_inventory()
        assert [n.name for n in inventory.nodes] == ["head", "worker-a", "worker-b"]
        assert inventory.node("head") == HEAD.nodes[0]  # the head's own, not the registry's
        worker_b = inventory.node("worker-b")
        assert worker_b is not None and not worker_b.ready

    def test_a_registry_that_cannot_be_read_fails_the_read(
        self, registry: FakeNodeRegistry, client: NodeRegistryClient
    ) -> None:
        registry.status_code = 503
        with pytest.raises(InventoryUnavailable):
            CombinedSource(_Fixed(HEAD), NodeRegistrySource(client)).read_inventory()

    def test_the_settings_choose_it(
        self, client: NodeRegistryClient, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("GATEWAY_INVENTORY_SOURCE", "local+registry")
        monkeypatch.setenv("GATEWAY_NODE_NAME", "head")
        source = open_inventory_source(InventorySettings(), registry=client)
        assert isinstance(source, CombinedSource)
        names = [n.name for n in source.read_inventory().nodes]
        assert names[0] == "head" and names[1:] == ["worker-a", "worker-b"]
