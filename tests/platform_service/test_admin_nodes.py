"""``/v1/admin/join-keys`` and ``/v1/admin/nodes``: the platform calls the real kuberay-service
(node registry on PostgreSQL) over HTTP; the real gateway reads that registry as its inventory,
so a cordon made here is what the scheduler sees."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from gridweave_controller import JobPhase
from tests.job_gateway.gateway_factories import GatewayServer, submit_body
from tests.kuberay_service.node_factories import (
    Registry,
    node_headers,
    validate,
    validate_body,
)
from tests.platform_service.admin_stack import FILE_NODE, MASTER, join_with, until_schedulable
from tests.platform_service.factories import (
    NOWHERE,
    PlatformServer,
    platform_settings,
    running_platform,
)
from tests.support.credit_server import INTERNAL_TOKEN

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def gateway(registry_gateway: GatewayServer) -> GatewayServer:
    """The real gateway whose inventory is the registry's nodes."""
    return registry_gateway


@pytest.fixture(scope="module")
def platform(admin_platform: PlatformServer) -> PlatformServer:
    """The platform over the registry and that gateway."""
    return admin_platform


def _create_key(platform: PlatformServer, **fields: Any) -> dict[str, Any]:
    response = platform.http.post(
        "/v1/admin/join-keys", json=fields, headers=platform.admin.headers
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def _joined_node(platform: PlatformServer, node_registry: Registry) -> str:
    """A machine joined with a key made through the platform (validated and registered)."""
    return join_with(node_registry, _create_key(platform)["key"])


def _field(response: httpx.Response) -> str:
    field: str = response.json()["error"]["fields"][0]["field"]
    return field


class TestCreateJoinKey:
    def test_the_key_and_its_join_command_are_shown_once(self, platform: PlatformServer) -> None:
        created = _create_key(
            platform, description="rack 4", ttl_seconds=3600, max_uses=3, max_gpus=8
        )
        assert created["key"].startswith("gwjk_")
        assert created["join_command"] == (
            f"sudo deploy/join-node.sh --master {MASTER} --join-key {created['key']}"
        )
        assert (created["max_uses"], created["uses"], created["max_gpus"]) == (3, 0, 8)
        assert created["created_by"] == platform.admin.user_id
        listed = platform.http.get("/v1/admin/join-keys", headers=platform.admin.headers)
        assert listed.status_code == 200
        entry = next(key for key in listed.json()["join_keys"] if key["id"] == created["id"])
        assert entry["description"] == "rack 4" and "key" not in entry
        assert created["key"] not in listed.text

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"ttl_seconds": 5}, "ttl_seconds"),
            ({"max_uses": 0}, "max_uses"),
            ({"max_gpus": "2"}, "max_gpus"),
            ({"vendor": "intel"}, "vendor"),
            ({"colour": "red"}, "colour"),
        ],
    )
    def test_bad_fields_are_named(
        self, platform: PlatformServer, body: dict[str, object], field: str
    ) -> None:
        response = platform.http.post(
            "/v1/admin/join-keys", json=body, headers=platform.admin.headers
        )
        assert response.status_code == 422, response.text
        assert _field(response) == field

    def test_only_admins(self, platform: PlatformServer) -> None:
        user = platform.new_user()
        for method, path in (
            ("GET", "/v1/admin/join-keys"),
            ("POST", "/v1/admin/join-keys"),
            ("DELETE", "/v1/admin/join-keys/jk_0123"),
            ("GET", "/v1/admin/nodes"),
            ("POST", "/v1/admin/nodes/gpu-a/drain"),
        ):
            response = platform.http.request(method, path, json={}, headers=user.headers)
            assert response.status_code == 403, (method, path, response.text)


class TestRevokeJoinKey:
    def test_a_revoked_key_joins_nothing(
        self, platform: PlatformServer, node_registry: Registry
    ) -> None:
        created = _create_key(platform)
        revoked = platform.http.delete(
            f"/v1/admin/join-keys/{created['id']}", headers=platform.admin.headers
        )
        assert revoked.status_code == 200, revoked.text
        assert revoked.json()["revoked_at"] is not None
        answer = validate(node_registry, validate_body(created["key"]))
        assert answer.status_code == 403 and "revoked" in answer.text

    def test_an_unknown_key_is_404_and_a_malformed_one_422(self, platform: PlatformServer) -> None:
        unknown = platform.http.delete(
            "/v1/admin/join-keys/jk_00ff", headers=platform.admin.headers
        )
        assert unknown.status_code == 404, unknown.text
        assert unknown.json()["error"]["code"] == "not_found"
        malformed = platform.http.delete(
            "/v1/admin/join-keys/key-1", headers=platform.admin.headers
        )
        assert malformed.status_code == 422 and _field(malformed) == "key_id"

    def test_an_unreachable_registry_is_503_naming_it(
        self, platform_database: str, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        settings = platform_settings(
            platform_database, tmp_path_factory.mktemp("down"), kuberay_url=NOWHERE
        )
        with running_platform(settings) as down:
            response = down.http.get("/v1/admin/join-keys", headers=down.admin.headers)
        assert response.status_code == 503
        assert "kuberay_service" in response.text


class TestCordon:
    def test_a_cordoned_node_takes_no_new_work_until_uncordoned(
        self, platform: PlatformServer, node_registry: Registry
    ) -> None:
        name = _joined_node(platform, node_registry)
        assert until_schedulable(platform, name, True) == [True, True, True]
        cordoned = platform.http.put(
            f"/v1/admin/nodes/{name}/cordon",
            json={"cordoned": True},
            headers=platform.admin.headers,
        )
        assert cordoned.status_code == 200, cordoned.text
        assert cordoned.json()["cordoned"] is True
        assert until_schedulable(platform, name, False) == [False, False, False]
        listed = platform.http.get("/v1/admin/nodes", headers=platform.admin.headers)
        entry = next(node for node in listed.json()["nodes"] if node["name"] == name)
        assert entry["cordoned"] is True and entry["last_heartbeat_at"] is not None
        uncordoned = platform.http.put(
            f"/v1/admin/nodes/{name}/cordon",
            json={"cordoned": False},
            headers=platform.admin.headers,
        )
        assert uncordoned.status_code == 200 and uncordoned.json()["cordoned"] is False
        assert until_schedulable(platform, name, True) == [True, True, True]

    def test_drain_cordons_and_says_what_still_holds_the_node(
        self, platform: PlatformServer, node_registry: Registry
    ) -> None:
        name = _joined_node(platform, node_registry)
        assert until_schedulable(platform, name, True) == [True, True, True]
        drained = platform.http.post(
            f"/v1/admin/nodes/{name}/drain", headers=platform.admin.headers
        )
        assert drained.status_code == 200, drained.text
        body = drained.json()
        assert body["node"]["cordoned"] is True
        assert (body["held_mb"], body["drained"]) == (0, True)
        assert until_schedulable(platform, name, False) == [False, False, False]

    @pytest.mark.parametrize(
        ("path", "body", "field"),
        [
            ("/v1/admin/nodes/Bad_Name/cordon", {"cordoned": True}, "name"),
            ("/v1/admin/nodes/gpu-a/cordon", {"cordoned": "yes"}, "cordoned"),
            ("/v1/admin/nodes/gpu-a/cordon", {}, "cordoned"),
        ],
    )
    def test_bad_input_is_422_naming_the_field(
        self, platform: PlatformServer, path: str, body: dict[str, object], field: str
    ) -> None:
        response = platform.http.put(path, json=body, headers=platform.admin.headers)
        assert response.status_code == 422, response.text
        assert _field(response) == field

    def test_an_unknown_node_is_404(self, platform: PlatformServer) -> None:
        for response in _cordon_and_drain(platform, "gpu-nowhere"):
            assert response.status_code == 404, response.text
            error = response.json()["error"]
            assert (error["code"], error["message"]) == ("not_found", "no node 'gpu-nowhere'")


def _cordon_and_drain(platform: PlatformServer, node: str) -> list[httpx.Response]:
    """An admin's cordon, then drain, of ``node``: the two answers."""
    base = f"/v1/admin/nodes/{node}"
    headers = platform.admin.headers
    return [
        platform.http.put(f"{base}/cordon", json={"cordoned": True}, headers=headers),
        platform.http.post(f"{base}/drain", headers=headers),
    ]


class TestOutsideTheRegistry:
    def test_a_node_of_the_gateways_inventory_is_409_saying_why(
        self, file_platform: PlatformServer
    ) -> None:
        listed = file_platform.http.get("/v1/nodes", headers=file_platform.admin.headers)
        assert [node["name"] for node in listed.json()["nodes"]] == [FILE_NODE]
        for response in _cordon_and_drain(file_platform, FILE_NODE):
            assert response.status_code == 409, response.text
            error = response.json()["error"]
            assert (error["code"], error["node"]) == ("node_not_joined", FILE_NODE)
            assert "not joined with a join key" in error["message"]
            assert "GATEWAY_INVENTORY_SOURCE=local" in error["message"]
            assert "'cordoned: true'" in error["message"]
        # a name neither lists is still the registry's 404
        unknown = file_platform.http.put(
            "/v1/admin/nodes/gpu-nowhere/cordon",
            json={"cordoned": True},
            headers=file_platform.admin.headers,
        )
        assert unknown.status_code == 404, unknown.text
        assert unknown.json()["error"]["message"] == "no node 'gpu-nowhere'"


def _inventory_gpu(platform: PlatformServer, headers: dict[str, str], node: str, index: int) -> Any:
    response = platform.http.get("/v1/nodes", headers=headers)
    assert response.status_code == 200, response.text
    listed = [entry for entry in response.json()["nodes"] if entry["name"] == node]
    return next((gpu for entry in listed for gpu in entry["gpus"] if gpu["index"] == index), None)


class TestNodeInventory:
    def test_measured_use_comes_from_the_heartbeat(
        self, platform: PlatformServer, node_registry: Registry
    ) -> None:
        answer = validate(node_registry, validate_body(_create_key(platform)["key"]))
        name, token = answer.json()["name"], answer.json()["node_token"]
        beat = {"gpus": [{"index": 0, "healthy": True, "free_vram_mb": 71_920}]}
        with node_registry.client(node_headers(token)) as http:
            assert http.post("/v1/nodes/register").status_code == 200
            assert http.post("/v1/nodes/heartbeat", json=beat).status_code == 200
        deadline = time.monotonic() + 20
        gpu = None
        while (gpu is None or gpu["used_mb"] is None) and time.monotonic() < deadline:
            time.sleep(0.1)  # the gateway reads the registry every 0.2 s
            gpu = _inventory_gpu(platform, platform.admin.headers, name, 0)
        assert gpu is not None
        assert (gpu["vram_mb"], gpu["used_mb"]) == (81_920, 10_000)
        # GPUs no heartbeat measured yet are "not measured", never a guess
        assert _inventory_gpu(platform, platform.admin.headers, name, 1)["used_mb"] is None

    def test_admins_see_every_holder_and_users_only_their_own(
        self, platform: PlatformServer, gateway: GatewayServer
    ) -> None:
        owner, other = platform.new_user(), platform.new_user()
        internal = {"Authorization": f"Bearer {INTERNAL_TOKEN}"}  # this gateway's token
        body = submit_body(user_id=owner.user_id, vendor="nvidia", vram_mb=2048)
        submitted = gateway.http.post("/v1/jobs", json=body, headers=internal)
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["job_id"]
        try:
            status = gateway.crd.wait_for_job(job_id, {JobPhase.ALLOCATED}, timeout=30).status
            assert status.node is not None
            (index,) = status.gpu_indices
            expected = {
                "kind": "job",
                "name": job_id,
                "display_name": job_id,
                "user_id": owner.user_id,
                "owner": owner.user_id,
                "vram_mb": 2048,
            }
            seen = _inventory_gpu(platform, platform.admin.headers, status.node, index)
            assert expected in seen["allocations"]
            assert sum(a["vram_mb"] for a in seen["allocations"]) == seen["held_mb"]
            mine = _inventory_gpu(platform, owner.headers, status.node, index)
            assert mine["allocations"] == [expected]
            theirs = _inventory_gpu(platform, other.headers, status.node, index)
            assert theirs["allocations"] == [] and theirs["held_mb"] == seen["held_mb"]
        finally:  # the other tests drain nodes: nothing of this one may hold them
            cancelled = gateway.http.post(f"/v1/jobs/{job_id}/cancel", headers=internal)
            assert cancelled.status_code == 200, cancelled.text
