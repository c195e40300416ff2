"""``PUT /v1/nodes/{name}/cordon`` over real HTTP on a real PostgreSQL: admins only, kept on
the node's row across restarts, read by the gateway's inventory as unschedulable GPUs."""

from __future__ import annotations

import pytest

from gridweave_clients.errors import Forbidden, NotFound
from gridweave_clients.errors import InvalidRequest as ClientInvalidRequest
from gridweave_clients.nodes import NodeListResponse, NodeRegistryClient
from job_gateway.inventory import inventory_from_nodes
from tests.kuberay_service.node_factories import (
    ADMIN,
    GATEWAY,
    INTERNAL,
    create_key,
    join_node,
    serve_registry,
    validate_body,
)
from tests.support.kuberay_fixtures import TOKEN

pytestmark = pytest.mark.postgres


def _joined_node(database: str) -> str:
    """A node validated and registered (Ready); its name."""
    with serve_registry(database) as registry:
        _, answer = join_node(registry)
    name: str = answer["name"]
    return name


def _listed(http_body: dict[str, object], name: str) -> dict[str, object]:
    nodes = NodeListResponse.model_validate(http_body).nodes
    return next(node for node in nodes if node.name == name).model_dump()


class TestCordon:
    def test_a_cordon_outlives_a_restart_and_makes_every_gpu_unschedulable(
        self, database: str
    ) -> None:
        name = _joined_node(database)
        with serve_registry(database) as registry, registry.client(ADMIN) as http:
            answer = http.put(f"/v1/nodes/{name}/cordon", json={"cordoned": True})
            assert answer.status_code == 200, answer.text
            assert answer.json()["cordoned"] is True and answer.json()["status"] == "Ready"
        with serve_registry(database) as restarted:  # a new process: only the row remembers
            with NodeRegistryClient(restarted.url, TOKEN) as client:
                inventory = inventory_from_nodes(client.list_nodes())
        node = inventory.node(name)
        assert node is not None and node.ready
        assert [gpu.schedulable for gpu in node.gpus] == [False, False, False]

    def test_uncordon_gives_the_gpus_back(self, database: str) -> None:
        name = _joined_node(database)
        with serve_registry(database) as registry:
            with NodeRegistryClient(registry.url, TOKEN, role="admin") as client:
                assert client.cordon_node(name, cordoned=True).cordoned
                assert client.cordon_node(name, cordoned=True).cordoned  # twice: the same
                assert not client.cordon_node(name, cordoned=False).cordoned
                inventory = inventory_from_nodes(client.list_nodes())
        node = inventory.node(name)
        assert node is not None and all(gpu.schedulable for gpu in node.gpus)


class TestRefusals:
    def test_only_admins_cordon(self, database: str) -> None:
        name = _joined_node(database)
        with serve_registry(database) as registry:
            for headers, status in ((GATEWAY, 403), ({}, 401)):
                with registry.client(headers) as http:
                    answer = http.put(f"/v1/nodes/{name}/cordon", json={"cordoned": True})
                assert answer.status_code == status, answer.text
            with registry.client(INTERNAL) as http:
                assert _listed(http.get("/v1/nodes").json(), name)["cordoned"] is False

    @pytest.mark.parametrize(
        ("body", "field"),
        [({"cordoned": "yes"}, "cordoned"), ({}, "cordoned"), ({"cordoned": True, "x": 1}, "x")],
    )
    def test_bad_bodies_name_the_field(
        self, database: str, body: dict[str, object], field: str
    ) -> None:
        with serve_registry(database) as registry, registry.client(ADMIN) as http:
            answer = http.put("/v1/nodes/gpu-anything/cordon", json=body)
        assert answer.status_code == 422, answer.text
        assert [cause["field"] for cause in answer.json()["details"]["causes"]] == [field]

    def test_an_unknown_node_is_404(self, database: str) -> None:
        with serve_registry(database) as registry:
            with NodeRegistryClient(registry.url, TOKEN, role="admin") as client:
                with pytest.raises(NotFound) as raised:
                    client.cordon_node("gpu-nowhere", cordoned=True)
        assert (raised.value.code, raised.value.status_code) == ("not_found", 404)
        assert "gpu-nowhere" in str(raised.value)


class TestStatusErrors:
    """The node registry client reads kuberay-service's Status refusals: reason, fields."""

    def test_a_refused_body_names_its_fields_and_reason(self, database: str) -> None:
        with serve_registry(database) as registry:
            with NodeRegistryClient(registry.url, TOKEN, role="admin") as client:
                with pytest.raises(ClientInvalidRequest) as raised:
                    client.request("POST", "/v1/nodes/join-keys", json={"max_uses": 0})
        assert (raised.value.code, raised.value.status_code) == ("invalid", 422)
        assert [item["field"] for item in raised.value.details["fields"]] == ["max_uses"]

    def test_a_node_reason_becomes_its_code(self, database: str) -> None:
        with serve_registry(database) as registry:
            key = create_key(registry)
            with registry.client(ADMIN) as http:
                assert http.delete(f"/v1/nodes/join-keys/{key['id']}").status_code == 200
            with NodeRegistryClient(registry.url, TOKEN) as client:
                with pytest.raises(Forbidden) as raised:
                    client.request("POST", "/v1/nodes/validate", json=validate_body(key["key"]))
        assert raised.value.code == "join_key_revoked" and "revoked" in str(raised.value)
