"""``/v1/nodes/join-keys`` over real HTTP on a real PostgreSQL: admins only, keys shown once."""

from __future__ import annotations

import hashlib

import psycopg
import pytest
from sqlalchemy.engine import make_url

from gridweave_clients.errors import Forbidden, NotFound
from gridweave_clients.errors import InvalidRequest as ClientInvalidRequest
from gridweave_clients.nodes import NodeRegistryClient
from tests.kuberay_service.node_factories import ADMIN, INTERNAL, Registry
from tests.support.kuberay_fixtures import TOKEN

pytestmark = pytest.mark.postgres


def _stored_hashes(registry: Registry) -> dict[str, str]:
    assert registry.settings.database_url is not None
    conninfo = make_url(registry.settings.database_url).set(drivername="postgresql")
    with psycopg.connect(conninfo.render_as_string(False)) as conn:
        rows = conn.execute("SELECT id, key_hash FROM join_keys").fetchall()
    return {row[0]: row[1] for row in rows}


class TestCreate:
    def test_the_key_is_shown_once_and_stored_hashed(self, registry: Registry) -> None:
        with registry.client(ADMIN) as http:
            created = http.post(
                "/v1/nodes/join-keys",
                json={"description": "lab", "max_uses": 3, "max_gpus": 8, "vendor": "amd"},
            )
            listed = http.get("/v1/nodes/join-keys")
        assert created.status_code == 201, created.text
        key = created.json()
        assert key["key"].startswith("gwjk_") and len(key["key"]) > 40
        assert (key["max_uses"], key["uses"], key["max_gpus"], key["vendor"]) == (3, 0, 8, "amd")
        assert key["created_by"] == "ops@example.com" and key["revoked_at"] is None
        entry = next(item for item in listed.json()["join_keys"] if item["id"] == key["id"])
        assert "key" not in entry and key["key"] not in listed.text
        stored = _stored_hashes(registry)[key["id"]]
        assert stored == hashlib.sha256(key["key"].encode()).hexdigest() != key["key"]

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
        self, registry: Registry, body: dict[str, object], field: str
    ) -> None:
        with registry.client(ADMIN) as http:
            response = http.post("/v1/nodes/join-keys", json=body)
        assert response.status_code == 422
        status = response.json()
        assert status["reason"] == "Invalid"
        assert [cause["field"] for cause in status["details"]["causes"]] == [field]


class TestAdminsOnly:
    @pytest.mark.parametrize(
        ("headers", "code"),
        [
            ({}, 401),
            ({**INTERNAL, "X-Gridweave-Role": "gateway"}, 403),
            ({**INTERNAL, "X-Gridweave-Role": "platform"}, 403),
        ],
        ids=["no-token", "the-gateway", "the-platform"],
    )
    def test_create_list_revoke_need_the_admin(
        self, registry: Registry, headers: dict[str, str], code: int
    ) -> None:
        with registry.client(headers) as http:
            answers = [
                http.post("/v1/nodes/join-keys", json={}),
                http.get("/v1/nodes/join-keys"),
                http.delete("/v1/nodes/join-keys/jk_00"),
            ]
        assert [answer.status_code for answer in answers] == [code] * 3
        assert all(answer.json()["kind"] == "Status" for answer in answers)


class TestRevoke:
    def test_revoking_twice_keeps_the_first_time(self, registry: Registry) -> None:
        with registry.client(ADMIN) as http:
            key = http.post("/v1/nodes/join-keys", json={}).json()
            first = http.delete(f"/v1/nodes/join-keys/{key['id']}")
            again = http.delete(f"/v1/nodes/join-keys/{key['id']}")
        assert first.status_code == again.status_code == 200
        assert first.json()["revoked_at"] is not None
        assert again.json()["revoked_at"] == first.json()["revoked_at"]

    def test_an_unknown_key_is_a_404(self, registry: Registry) -> None:
        with registry.client(ADMIN) as http:
            response = http.delete("/v1/nodes/join-keys/jk_0123456789abcdef")
        assert (response.status_code, response.json()["reason"]) == (404, "NotFound")


class TestAdminClient:
    """gridweave_clients.nodes.NodeRegistryClient against the real routes."""

    def test_create_list_revoke_and_remove(self, registry: Registry) -> None:
        with NodeRegistryClient(registry.url, TOKEN, role="admin", user="ops@example.com") as admin:
            created = admin.create_join_key(max_uses=2, vendor="nvidia", description="rack 4")
            listed = admin.list_join_keys()
            revoked = admin.revoke_join_key(created.id)
            with pytest.raises(NotFound, match="no node"):
                admin.remove_node("gpu-nowhere")
        assert created.key.startswith("gwjk_") and created.created_by == "ops@example.com"
        assert created.id in [key.id for key in listed.join_keys]
        assert revoked.revoked_at is not None and revoked.id == created.id

    def test_refusals_are_the_clients_errors(self, registry: Registry) -> None:
        with NodeRegistryClient(registry.url, TOKEN, role="platform") as other:
            with pytest.raises(Forbidden):
                other.list_join_keys()
            with pytest.raises(ClientInvalidRequest, match="key_id"):
                other.revoke_join_key("not-a-key-id")  # refused before anything is sent
