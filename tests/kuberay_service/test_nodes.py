"""The node registry over real HTTP on a real PostgreSQL: validate, register, heartbeat, leave."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.kuberay_service.node_factories import (
    ADMIN,
    GATEWAY,
    INTERNAL,
    K3S_TOKEN,
    MASTER_KEY,
    MIXED_GPUS,
    Registry,
    create_key,
    gpu,
    hostname,
    join_node,
    node_headers,
    registry_settings,
    serve_registry,
    validate,
    validate_body,
)

pytestmark = pytest.mark.postgres


def _sql(registry: Registry, statement: str, *params: Any) -> None:
    assert registry.settings.database_url is not None
    conninfo = make_url(registry.settings.database_url).set(drivername="postgresql")
    with psycopg.connect(conninfo.render_as_string(False)) as conn:
        conn.execute(statement, params)


def _listed(registry: Registry, name: str) -> dict[str, Any] | None:
    with registry.client(INTERNAL) as http:
        response = http.get("/v1/nodes")
    assert response.status_code == 200
    return next((node for node in response.json()["nodes"] if node["name"] == name), None)


class TestValidate:
    def test_a_mixed_node_gets_an_address_and_what_it_joins_with(self, registry: Registry) -> None:
        key = create_key(registry, max_uses=2)
        body = validate_body(key["key"], labels={"zone": "lab-1"})
        response = validate(registry, body)
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer["name"] == body["hostname"]
        assert answer["vpn_ip"].startswith("10.88.") and answer["vpn_ip"] != "10.88.0.1"
        assert answer["vpn_cidr"] == "10.88.0.0/16"
        assert answer["master"] == {
            "public_key": MASTER_KEY,
            "endpoint": "203.0.113.10:51820",
            "vpn_ip": "10.88.0.1",
        }
        assert answer["k3s"] == {"url": "https://10.88.0.1:6443", "token": K3S_TOKEN}
        assert answer["registry"] == "10.88.0.1:30500"
        assert answer["node_token"].startswith("gwnt_")
        node = _listed(registry, body["hostname"])
        assert node is not None
        assert (node["status"], node["joined_at"], node["vpn_ip"]) == (
            "NotReady",
            None,
            answer["vpn_ip"],
        )
        assert [(g["index"], g["model"]) for g in node["gpus"]] == [
            (g["index"], g["model"]) for g in MIXED_GPUS
        ]
        assert node["labels"] == {"zone": "lab-1"}
        assert (node["cpu_millis"], node["memory_mb"]) == (None, None)  # not said

    def test_the_nodes_cpu_and_memory_are_kept_and_replaced_by_a_new_validation(
        self, registry: Registry
    ) -> None:
        key = create_key(registry, max_uses=1)
        body = validate_body(key["key"], cpu_millis=64_000, memory_mb=262_144)
        assert validate(registry, body).status_code == 200
        node = _listed(registry, body["hostname"])
        assert node is not None and (node["cpu_millis"], node["memory_mb"]) == (64_000, 262_144)
        assert validate(registry, body | {"cpu_millis": 32_000}).status_code == 200
        node = _listed(registry, body["hostname"])
        assert node is not None and (node["cpu_millis"], node["memory_mb"]) == (32_000, 262_144)

    def test_the_same_node_and_key_get_the_same_address_and_use(self, registry: Registry) -> None:
        key = create_key(registry, max_uses=1)
        body = validate_body(key["key"])
        first = validate(registry, body)
        again = validate(
            registry, body | {"wireguard_public_key": validate_body("")["wireguard_public_key"]}
        )
        assert first.status_code == again.status_code == 200, again.text
        assert first.json()["vpn_ip"] == again.json()["vpn_ip"]
        assert first.json()["node_token"] != again.json()["node_token"]
        with registry.client(node_headers(first.json()["node_token"])) as http:
            assert http.post("/v1/nodes/register").status_code == 401  # replaced
        with registry.client(ADMIN) as http:
            listed = http.get("/v1/nodes/join-keys").json()["join_keys"]
        assert next(k for k in listed if k["id"] == key["id"])["uses"] == 1

    def test_expired_revoked_used_up_and_unknown_keys_say_which(self, registry: Registry) -> None:
        expired, revoked, used = (create_key(registry) for _ in range(3))
        _sql(
            registry,
            "UPDATE join_keys SET expires_at = now() - interval '1 s' WHERE id = %s",
            expired["id"],
        )
        with registry.client(ADMIN) as http:
            http.delete(f"/v1/nodes/join-keys/{revoked['id']}")
        assert validate(registry, validate_body(used["key"])).status_code == 200
        answers = {
            name: validate(registry, validate_body(key))
            for name, key in [
                ("expired", expired["key"]),
                ("revoked", revoked["key"]),
                ("used up", used["key"]),
                ("no such", "gwjk_not-a-key"),
            ]
        }
        assert {name: answer.status_code for name, answer in answers.items()} == {
            "expired": 403,
            "revoked": 403,
            "used up": 403,
            "no such": 401,
        }
        for name, answer in answers.items():
            status = answer.json()
            assert name in status["message"], status
        assert [a.json()["reason"] for a in answers.values()] == [
            "JoinKeyExpired",
            "JoinKeyRevoked",
            "JoinKeyUsedUp",
            "JoinKeyUnknown",
        ]
        assert "1 of 1 nodes" in answers["used up"].json()["message"]

    def test_the_key_limits_name_the_field(self, registry: Registry) -> None:
        few = create_key(registry, max_gpus=2)
        amd = create_key(registry, vendor="amd")
        too_many = validate(registry, validate_body(few["key"]))
        mixed = validate(
            registry, validate_body(amd["key"], gpus=[gpu(0, "amd", "AMD MI300X", 196_608), gpu(1)])
        )
        assert (too_many.status_code, mixed.status_code) == (403, 403)
        assert too_many.json()["details"]["causes"][0]["field"] == "gpus"
        assert mixed.json()["details"]["causes"][0]["field"] == "gpus[1].vendor"
        assert "3 GPUs" in too_many.json()["message"]

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"hostname": "Not_A_Host"}, "hostname"),
            ({"wireguard_public_key": "x" * 44}, "wireguard_public_key"),
            ({"gpus": []}, "gpus"),
            ({"gpus": [gpu(0), gpu(0)]}, "gpus"),
            ({"gpus": [gpu(0, vram_mb=0)]}, "gpus.0.vram_mb"),
            ({"gpus": [gpu(0, vendor="intel")]}, "gpus.0.vendor"),
            ({"cpu_millis": 0}, "cpu_millis"),
            ({"memory_mb": "4096"}, "memory_mb"),
        ],
    )
    def test_bad_fields_are_named(
        self, registry: Registry, change: dict[str, Any], field: str
    ) -> None:
        response = validate(registry, validate_body("gwjk_whatever") | change)
        assert response.status_code == 422
        assert field in [cause["field"] for cause in response.json()["details"]["causes"]]

    def test_another_node_with_the_same_wireguard_key_is_refused(self, registry: Registry) -> None:
        key = create_key(registry, max_uses=2)
        first = validate_body(key["key"])
        assert validate(registry, first).status_code == 200
        clash = validate(
            registry, validate_body(key["key"], wireguard_public_key=first["wireguard_public_key"])
        )
        assert (clash.status_code, clash.json()["reason"]) == (409, "NodeConflict")
        assert "wireguard_public_key" in clash.json()["message"]

    def test_twenty_concurrent_validations_never_share_an_address(self, registry: Registry) -> None:
        keys = [create_key(registry)["key"] for _ in range(20)]
        barrier = threading.Barrier(20)

        def one(key: str) -> httpx.Response:
            barrier.wait()
            return validate(registry, validate_body(key))

        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(one, keys))
        assert [a.status_code for a in answers] == [200] * 20, [a.text for a in answers]
        addresses = [a.json()["vpn_ip"] for a in answers]
        assert len(set(addresses)) == 20


class TestPoolAndMesh:
    def test_an_exhausted_pool_is_a_clear_error_and_a_leave_frees_an_address(
        self, database: str
    ) -> None:
        # a /29: 6 hosts, the master's is the first: 5 nodes fit
        with serve_registry(database, mesh_cidr="10.99.0.0/29") as small:
            key = create_key(small, max_uses=7)
            answers = [validate(small, validate_body(key["key"])) for _ in range(6)]
            assert [a.status_code for a in answers] == [200] * 5 + [409]
            refusal = answers[-1].json()
            assert refusal["reason"] == "VpnPoolExhausted"
            assert "10.99.0.0/29 has no free address" in refusal["message"]
            held = sorted(a.json()["vpn_ip"] for a in answers[:5])
            assert held == [f"10.99.0.{host}" for host in range(2, 7)]
            with small.client(node_headers(answers[1].json()["node_token"])) as http:
                assert http.post("/v1/nodes/leave").status_code == 204
            again = validate(small, validate_body(key["key"]))
            assert (again.status_code, again.json()["vpn_ip"]) == (200, answers[1].json()["vpn_ip"])
        _sql(small, "DELETE FROM nodes WHERE vpn_ip LIKE '10.99.%%'")

    def test_an_unconfigured_mesh_names_the_missing_settings(self, database: str) -> None:
        with serve_registry(database, wireguard_endpoint=None, k3s_token=None) as bare:
            response = validate(bare, validate_body(create_key(bare)["key"]))
        assert (response.status_code, response.json()["reason"]) == (503, "MeshNotConfigured")
        assert "KUBERAY_WIREGUARD_ENDPOINT, KUBERAY_K3S_TOKEN" in response.json()["message"]

    def test_validations_are_rate_limited_per_address(self, database: str) -> None:
        with serve_registry(database, validate_rate_limit=3) as limited:
            answers = [validate(limited, validate_body("gwjk_nope")) for _ in range(4)]
        assert [a.status_code for a in answers] == [401, 401, 401, 429]
        assert answers[-1].json()["reason"] == "TooManyRequests"
        assert int(answers[-1].headers["retry-after"]) >= 1


class TestLifecycle:
    def test_register_then_heartbeats_with_gpu_health(self, registry: Registry) -> None:
        name, joined = join_node(registry)
        node = _listed(registry, name)
        assert node is not None and node["status"] == "Ready" and node["joined_at"]
        beat = {
            "gpus": [
                {"index": 1, "healthy": False, "free_vram_mb": 100},
                {"index": 0, "healthy": True, "free_vram_mb": 80_000},
            ]
        }
        with registry.client(node_headers(joined["node_token"])) as http:
            answer = http.post("/v1/nodes/heartbeat", json=beat)
            unknown = http.post(
                "/v1/nodes/heartbeat",
                json={"gpus": [{"index": 7, "healthy": True, "free_vram_mb": 1}]},
            )
        assert answer.status_code == 200, answer.text
        gpus = {g["index"]: (g["healthy"], g["free_vram_mb"]) for g in answer.json()["gpus"]}
        assert gpus == {0: (True, 80_000), 1: (False, 100), 2: (True, None)}
        assert answer.json()["joined_at"] == node["joined_at"]
        assert unknown.status_code == 422
        assert unknown.json()["details"]["causes"][0]["field"] == "gpus[0].index"

    def test_a_heartbeat_before_register_is_refused(self, registry: Registry) -> None:
        answer = validate(registry, validate_body(create_key(registry)["key"]))
        with registry.client(node_headers(answer.json()["node_token"])) as http:
            response = http.post("/v1/nodes/heartbeat", json={})
        assert (response.status_code, response.json()["reason"]) == (409, "NodeNotRegistered")

    @pytest.mark.parametrize(
        "path", ["/v1/nodes/register", "/v1/nodes/heartbeat", "/v1/nodes/leave"]
    )
    def test_node_routes_need_the_node_token(self, registry: Registry, path: str) -> None:
        for headers in ({}, INTERNAL, node_headers("gwnt_forged")):
            with registry.client(headers) as http:
                response = http.post(path, json={})
            assert (response.status_code, response.json()["reason"]) == (401, "NodeTokenUnknown")

    def test_listing_needs_the_internal_token(self, registry: Registry) -> None:
        with registry.client() as http:
            assert http.get("/v1/nodes").status_code == 401

    def test_a_silent_node_goes_not_ready(self, database: str) -> None:
        with serve_registry(database, heartbeat_timeout_seconds=0.5) as quick:
            name, joined = join_node(quick)
            with quick.client(node_headers(joined["node_token"])) as http:
                assert http.post("/v1/nodes/heartbeat", json={}).status_code == 200
            time.sleep(0.7)
            silent = _listed(quick, name)
            with quick.client(node_headers(joined["node_token"])) as http:
                back = http.post("/v1/nodes/heartbeat", json={})
            assert silent is not None and silent["status"] == "NotReady"
            assert back.json()["status"] == "Ready"

    def test_leave_removes_the_node_and_voids_its_token(self, registry: Registry) -> None:
        name, joined = join_node(registry)
        with registry.client(node_headers(joined["node_token"])) as http:
            assert http.post("/v1/nodes/leave").status_code == 204
            assert http.post("/v1/nodes/leave").status_code == 401
        assert _listed(registry, name) is None

    def test_an_admin_removes_a_node(self, registry: Registry) -> None:
        name, joined = join_node(registry)
        with registry.client(GATEWAY) as http:
            assert http.delete(f"/v1/nodes/{name}").status_code == 403
        with registry.client(ADMIN) as http:
            assert http.delete(f"/v1/nodes/{name}").status_code == 204
            missing = http.delete(f"/v1/nodes/{name}")
        assert (missing.status_code, missing.json()["reason"]) == (404, "NotFound")
        assert _listed(registry, name) is None
        with registry.client(node_headers(joined["node_token"])) as http:
            assert http.post("/v1/nodes/heartbeat", json={}).status_code == 401

    def test_a_removed_node_may_join_again_with_a_fresh_use(self, registry: Registry) -> None:
        key = create_key(registry, max_uses=2)
        body = validate_body(key["key"], hostname=hostname())
        assert validate(registry, body).status_code == 200
        with registry.client(ADMIN) as http:
            assert http.delete(f"/v1/nodes/{body['hostname']}").status_code == 204
        assert validate(registry, body).status_code == 200
        assert validate(registry, validate_body(key["key"])).json()["reason"] == "JoinKeyUsedUp"


class TestSettings:
    @pytest.mark.parametrize(
        ("overrides", "message"),
        [
            ({"wireguard_public_key": "not-a-key"}, "not a WireGuard key"),
            ({"wireguard_endpoint": "203.0.113.10"}, "is not host:port"),
            ({"mesh_cidr": "10.0.0.0/31"}, "too small"),
            ({"master_vpn_ip": "10.1.0.1"}, "outside 10.88.0.0/16"),
        ],
    )
    def test_a_bad_mesh_setting_stops_the_start(
        self, overrides: dict[str, str], message: str
    ) -> None:
        with pytest.raises(ValueError, match=message):
            registry_settings("postgresql+psycopg://unused/db", **overrides)
