"""The platform's registry token endpoint, JWK Set and internal routes, over real HTTP."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from gridweave_clients.platform.registry import DEFAULT_REGISTRY_SERVICE, TOKEN_ISSUER
from platform_service.services.registry import MaintenanceWindow
from tests.platform_service.factories import PlatformServer, User
from tests.support.credit_server import INTERNAL_TOKEN

pytestmark = pytest.mark.postgres


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def basic(user: User) -> tuple[str, str]:
    return ("anyone", user.key)


def token(
    platform: PlatformServer, auth: tuple[str, str] | None, *scopes: str, **params: str
) -> httpx.Response:
    query: list[tuple[str, str | int | float | bool | None]] = [
        ("service", params.get("service", DEFAULT_REGISTRY_SERVICE))
    ]
    query += [("scope", scope) for scope in scopes]
    return platform.http.get("/v1/registry/token", params=query, auth=auth)


def verified_claims(platform: PlatformServer, jwt: str) -> dict[str, Any]:
    """The token's claims, its ES256 signature checked with the published JWK Set."""
    header_b64, claims_b64, signature_b64 = jwt.split(".")
    header = json.loads(_unb64(header_b64))
    jwks = platform.http.get("/v1/registry/jwks").json()
    (jwk,) = [key for key in jwks["keys"] if key["kid"] == header["kid"]]
    public = ec.EllipticCurvePublicNumbers(
        int.from_bytes(_unb64(jwk["x"]), "big"),
        int.from_bytes(_unb64(jwk["y"]), "big"),
        ec.SECP256R1(),
    ).public_key()
    raw = _unb64(signature_b64)
    signature = encode_dss_signature(
        int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
    )
    public.verify(signature, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    assert header["alg"] == "ES256"
    claims: dict[str, Any] = json.loads(_unb64(claims_b64))
    return claims


class TestTokens:
    def test_a_user_gets_pull_and_push_on_its_own_namespace(self, platform: PlatformServer) -> None:
        user = platform.new_user()
        response = token(platform, basic(user), f"repository:{user.user_id}/app:pull,push")
        assert response.status_code == 200, response.text
        claims = verified_claims(platform, response.json()["token"])
        assert claims["iss"] == TOKEN_ISSUER
        assert claims["aud"] == DEFAULT_REGISTRY_SERVICE
        assert claims["sub"] == user.user_id
        assert claims["exp"] - claims["iat"] == 300
        assert claims["access"] == [
            {"type": "repository", "name": f"{user.user_id}/app", "actions": ["pull", "push"]}
        ]

    def test_another_users_scope_is_left_out_of_a_mixed_request(
        self, platform: PlatformServer
    ) -> None:
        user, other = platform.new_user(), platform.new_user()
        response = token(
            platform,
            basic(user),
            f"repository:{user.user_id}/app:pull,push",
            f"repository:{other.user_id}/app:pull",
        )
        assert response.status_code == 200
        access = verified_claims(platform, response.json()["token"])["access"]
        assert [entry["name"] for entry in access] == [f"{user.user_id}/app"]

    def test_a_login_without_scope_gets_an_empty_token(self, platform: PlatformServer) -> None:
        response = token(platform, basic(platform.new_user()))
        assert response.status_code == 200
        assert verified_claims(platform, response.json()["token"])["access"] == []

    def test_admins_get_the_catalog(self, platform: PlatformServer) -> None:
        response = token(platform, basic(platform.admin), "registry:catalog:*")
        assert response.status_code == 200
        access = verified_claims(platform, response.json()["token"])["access"]
        assert access == [{"type": "registry", "name": "catalog", "actions": ["*"]}]
        user_refused = token(platform, basic(platform.new_user()), "registry:catalog:*")
        assert user_refused.status_code == 403


class TestRefusals:
    def test_without_credentials_401_with_a_basic_challenge(self, platform: PlatformServer) -> None:
        response = token(platform, None, "repository:usr-0000000000000000/app:pull")
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Basic")
        assert response.json()["errors"][0]["code"] == "UNAUTHORIZED"

    def test_another_service_names_the_field(self, platform: PlatformServer) -> None:
        response = token(platform, basic(platform.new_user()), service="elsewhere")
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "service"

    def test_a_malformed_scope_names_the_field(self, platform: PlatformServer) -> None:
        response = token(platform, basic(platform.new_user()), "repository-without-actions")
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "scope"

    @pytest.mark.parametrize(
        ("method", "path", "body"),
        [
            ("POST", "/v1/registry/events", {"events": []}),
            ("PUT", "/v1/registry/usage/report", {"blobs": []}),
            ("PUT", "/v1/registry/maintenance", {"read_only": True}),
        ],
    )
    def test_the_registrys_routes_take_the_internal_token_only(
        self, platform: PlatformServer, method: str, path: str, body: dict[str, Any]
    ) -> None:
        user = platform.new_user()
        assert platform.http.request(method, path, json=body).status_code == 401
        refused = platform.http.request(method, path, json=body, headers=user.headers)
        assert refused.status_code == 401
        if path != "/v1/registry/maintenance":  # not left read-only for the other tests
            accepted = platform.http.request(
                method, path, json=body, headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"}
            )
            assert accepted.status_code == 200, accepted.text


class TestWriteTokensBeforeACollection:
    """What the platform tells a collection: until when a granted write token is valid."""

    def test_only_tokens_that_write_count_and_the_latest_expiry_wins(self) -> None:
        window = MaintenanceWindow(token_seconds=0)
        assert window.writes_expire_in == 0
        pull = [{"type": "repository", "name": "usr-a/app", "actions": ["pull"]}]
        window.writes_granted(pull, 300)
        assert window.writes_expire_in == 0
        push = [*pull, {"type": "repository", "name": "usr-a/web", "actions": ["pull", "push"]}]
        window.writes_granted(push, 300)
        window.writes_granted([{"type": "registry", "name": "catalog", "actions": ["*"]}], 60)
        assert 299 <= window.writes_expire_in <= 300

    def test_a_new_process_counts_the_tokens_a_previous_one_may_have_granted(self) -> None:
        assert 119 <= MaintenanceWindow(token_seconds=120).writes_expire_in <= 120

    def test_the_maintenance_route_says_when_the_last_write_token_expires(
        self, platform: PlatformServer
    ) -> None:
        internal = {"Authorization": f"Bearer {INTERNAL_TOKEN}"}
        user = platform.new_user()
        scope = f"repository:{user.user_id}/app:pull,push"
        assert token(platform, basic(user), scope).status_code == 200
        try:
            answer = platform.http.put(
                "/v1/registry/maintenance", json={"read_only": True}, headers=internal
            )
            assert answer.status_code == 200
            assert answer.json()["read_only"] is True
            assert 0 < answer.json()["writes_expire_in"] <= 300
        finally:
            platform.http.put(
                "/v1/registry/maintenance", json={"read_only": False}, headers=internal
            )
