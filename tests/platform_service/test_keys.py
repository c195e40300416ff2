"""API keys and users over real HTTP on a real database: deny by default, hashed, revocable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.platform_service.factories import (
    NOWHERE,
    PlatformServer,
    bearer,
)
from tests.support.credentials import service_auth_env
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.service_process import running_service_process

pytestmark = pytest.mark.postgres


def _stored_rows(database_url: str) -> list[tuple[str, ...]]:
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute("SELECT key_id, name, secret_hash FROM api_keys").fetchall()
    return [tuple(str(value) for value in row) for row in rows]


class TestDenyByDefault:
    @pytest.mark.parametrize(
        ("method", "path"),
        [
            ("GET", "/v1/me"),
            ("GET", "/v1/jobs"),
            ("POST", "/v1/jobs"),
            ("GET", "/v1/jobs/job-1/result"),
            ("GET", "/v1/credits"),
            ("GET", "/v1/no-such-route"),
        ],
    )
    def test_no_key_is_401(self, lone_platform: PlatformServer, method: str, path: str) -> None:
        response = lone_platform.http.request(method, path)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"

    @pytest.mark.parametrize(
        "key",
        [
            "gw_live_",
            "not-a-key",
            "gw_live_0123456789ab_" + "a" * 43,  # well formed, unknown
            INTERNAL_TOKEN,  # the internal token is no API key
        ],
    )
    def test_a_wrong_key_is_401(self, lone_platform: PlatformServer, key: str) -> None:
        assert lone_platform.http.get("/v1/me", headers=bearer(key)).status_code == 401

    def test_a_real_key_with_another_secret_is_401(self, lone_platform: PlatformServer) -> None:
        forged = lone_platform.admin.key[:-4] + (
            "AAAA" if not lone_platform.admin.key.endswith("AAAA") else "BBBB"
        )
        assert lone_platform.http.get("/v1/me", headers=bearer(forged)).status_code == 401

    def test_public_routes(self, lone_platform: PlatformServer) -> None:
        assert lone_platform.http.get("/healthz").json() == {"status": "ok"}
        assert lone_platform.http.get("/metrics").status_code == 200
        document = lone_platform.http.get("/openapi.json").json()
        assert {"/v1/jobs", "/v1/keys", "/v1/signups", "/v1/usage"} <= set(document["paths"])
        assert document["security"] == [{"apiKey": []}]
        assert document["paths"]["/v1/signups"]["post"]["security"] == []
        assert "swagger" in lone_platform.http.get("/docs").text.lower()


class TestUsers:
    def test_an_admin_creates_a_user_with_a_first_key(self, lone_platform: PlatformServer) -> None:
        user = lone_platform.new_user()
        me = lone_platform.http.get("/v1/me", headers=user.headers).json()
        assert me["user_id"] == user.user_id and me["role"] == "user"
        assert user.key.startswith("gw_live_")

    def test_a_user_may_not_create_users(self, lone_platform: PlatformServer) -> None:
        user = lone_platform.new_user()
        response = lone_platform.http.post("/v1/users", json={}, headers=user.headers)
        assert response.status_code == 403

    def test_a_taken_email_is_409_naming_it(self, lone_platform: PlatformServer) -> None:
        body = {"email": "same-person@example.com"}
        first = lone_platform.http.post("/v1/users", json=body, headers=lone_platform.admin.headers)
        again = lone_platform.http.post("/v1/users", json=body, headers=lone_platform.admin.headers)
        assert first.status_code == 201
        assert again.status_code == 409 and again.json()["error"]["field"] == "email"

    def test_bad_fields_are_named(self, lone_platform: PlatformServer) -> None:
        response = lone_platform.http.post(
            "/v1/users", json={"email": "nope", "role": "root"}, headers=lone_platform.admin.headers
        )
        assert response.status_code == 422
        named = {item["field"] for item in response.json()["error"]["fields"]}
        assert named == {"email", "role"}


class TestKeys:
    def test_issue_list_revoke(self, lone_platform: PlatformServer, platform_database: str) -> None:
        user = lone_platform.new_user()
        issued = lone_platform.http.post("/v1/keys", json={"name": "laptop"}, headers=user.headers)
        assert issued.status_code == 201
        second = issued.json()
        assert second["api_key"].startswith(f"gw_live_{second['key_id']}_")

        listed = lone_platform.http.get("/v1/keys", headers=user.headers).json()["keys"]
        assert [key["name"] for key in listed] == ["laptop", "default"]
        assert all("api_key" not in key for key in listed)
        assert listed[0]["prefix"] == f"gw_live_{second['key_id']}"

        # stored hashed: neither the key nor its secret is in the table
        secret = second["api_key"].rsplit("_", 1)[1]
        row = next(row for row in _stored_rows(platform_database) if row[0] == second["key_id"])
        assert secret not in "".join(row) and len(row[2]) == 64

        # used (so accepted from memory for a while), then revoked: refused at once
        assert (
            lone_platform.http.get("/v1/me", headers=bearer(second["api_key"])).status_code == 200
        )
        revoked = lone_platform.http.delete(f"/v1/keys/{second['key_id']}", headers=user.headers)
        assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
        assert (
            lone_platform.http.get("/v1/me", headers=bearer(second["api_key"])).status_code == 401
        )
        assert lone_platform.http.get("/v1/me", headers=user.headers).status_code == 200
        again = lone_platform.http.delete(f"/v1/keys/{second['key_id']}", headers=user.headers)
        assert again.json()["revoked_at"] == revoked.json()["revoked_at"]

    def test_another_users_key_is_not_found(self, lone_platform: PlatformServer) -> None:
        owner, other = lone_platform.new_user(), lone_platform.new_user()
        key_id = lone_platform.http.get("/v1/keys", headers=owner.headers).json()["keys"][0][
            "key_id"
        ]
        response = lone_platform.http.delete(f"/v1/keys/{key_id}", headers=other.headers)
        assert response.status_code == 404
        assert lone_platform.http.get("/v1/me", headers=owner.headers).status_code == 200

    def test_a_malformed_key_id_is_422(self, lone_platform: PlatformServer) -> None:
        response = lone_platform.http.delete("/v1/keys/ZZZ", headers=lone_platform.admin.headers)
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "key_id"


def test_the_command_line_creates_an_admin_then_serves(
    platform_database: str, tmp_path: Path
) -> None:
    """``python -m platform_service create-admin``, then ``python -m platform_service``."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PLATFORM_DATABASE_URL": platform_database,
        **service_auth_env(INTERNAL_TOKEN),
        "GRIDWEAVE_STATE_DIR": str(tmp_path),
        "HOME": str(tmp_path),
        "CREDIT_SERVICE_URL": NOWHERE,
        "PLATFORM_CREDIT_ATTEMPTS": "1",
    }
    command = [
        sys.executable,
        "-m",
        "platform_service",
        "create-admin",
        "--email",
        "ops@example.com",
    ]
    keys = []
    for _ in range(2):  # a second run reuses the admin and prints a new key
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        keys.append(result.stdout.strip())
    assert keys[0] != keys[1]
    with running_service_process(
        "platform_service", env, prefix="PLATFORM_", log=tmp_path / "lone_platform.log"
    ) as (url, _port):
        for key in keys:
            me = httpx.get(f"{url}/v1/me", headers=bearer(key)).json()
            assert me["email"] == "ops@example.com" and me["role"] == "admin"
        credits = httpx.get(f"{url}/v1/credits", headers=bearer(keys[0]))
        assert credits.status_code == 503
        assert credits.json()["error"]["service"] == "credit_service"
        assert (
            httpx.get(f"{url}/openapi.json").json()["info"]["title"] == "Gridweave platform_service"
        )
