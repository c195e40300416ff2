"""Sign-up through the real faucet (codes read from its outbox) and the real credit_service."""

from __future__ import annotations

import uuid

import httpx
import pytest

from gridweave_clients.platform import PlatformClient
from tests.faucet_service.factories import GRANT, latest_code
from tests.faucet_service.factories import wrong_code as another_code
from tests.platform_service.factories import (
    PlatformServer,
    bearer,
)

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def platform(faucet_platform: PlatformServer) -> PlatformServer:
    """The platform calling the faucet and credit_service."""
    return faucet_platform


def _new_email() -> str:
    return f"Person-{uuid.uuid4().hex[:8]}@Example.com"


class TestSignUp:
    def test_code_then_user_key_and_grant(
        self, platform: PlatformServer, faucet: httpx.Client
    ) -> None:
        email = _new_email()
        sent = platform.http.post("/v1/signups", json={"email": email})
        assert sent.status_code == 202, sent.text
        assert sent.json()["email"] == email.lower() and sent.json()["delivery"] == "outbox"

        code = latest_code(faucet, email.lower())
        wrong = platform.http.post(
            "/v1/signups/verify", json={"email": email, "code": another_code(code)}
        )
        assert wrong.status_code == 400
        assert wrong.json()["error"]["code"] == "wrong_code"
        assert wrong.json()["error"]["attempts_left"] == 4

        verified = platform.http.post("/v1/signups/verify", json={"email": email, "code": code})
        assert verified.status_code == 201, verified.text
        body = verified.json()
        assert body["grant"] == GRANT and body["user"]["email"] == email.lower()
        key = body["api_key"]["api_key"]
        me = platform.http.get("/v1/me", headers=bearer(key)).json()
        assert me["user_id"] == body["user"]["user_id"] and me["verified_at"] is not None
        credits = platform.http.get("/v1/credits", headers=bearer(key)).json()
        assert credits["balance"] == GRANT

        # the same code never issues a second key; the email cannot sign up again
        again = platform.http.post("/v1/signups/verify", json={"email": email, "code": code})
        assert again.status_code == 409 and again.json()["error"]["field"] == "email"
        resent = platform.http.post("/v1/signups", json={"email": email})
        assert resent.status_code == 409

    def test_asking_twice_keeps_one_user(
        self, platform: PlatformServer, faucet: httpx.Client
    ) -> None:
        email = _new_email().lower()
        for _ in range(2):
            assert platform.http.post("/v1/signups", json={"email": email}).status_code == 202
        code = latest_code(faucet, email)
        verified = platform.http.post("/v1/signups/verify", json={"email": email, "code": code})
        assert verified.status_code == 201, verified.text

    def test_an_email_an_admin_registered_cannot_sign_up(self, platform: PlatformServer) -> None:
        email = _new_email().lower()
        created = platform.http.post(
            "/v1/users", json={"email": email}, headers=platform.admin.headers
        )
        assert created.status_code == 201
        response = platform.http.post("/v1/signups", json={"email": email})
        assert response.status_code == 409 and response.json()["error"]["field"] == "email"

    def test_verify_without_a_sign_up_is_404(self, platform: PlatformServer) -> None:
        response = platform.http.post(
            "/v1/signups/verify", json={"email": _new_email(), "code": "123456"}
        )
        assert response.status_code == 404

    @pytest.mark.parametrize(
        ("body", "field"),
        [({"email": "nobody"}, "email"), ({"email": "a@b.co", "code": "12"}, "code")],
    )
    def test_bad_fields_are_named(
        self, platform: PlatformServer, body: dict[str, str], field: str
    ) -> None:
        path = "/v1/signups/verify" if "code" in body else "/v1/signups"
        response = platform.http.post(path, json=body)
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == field


def test_the_platform_client_signs_up_without_a_key(
    platform: PlatformServer, faucet: httpx.Client
) -> None:
    email = _new_email().lower()
    with PlatformClient(platform.url) as anonymous:
        assert anonymous.sign_up(email).delivery == "outbox"
        registered = anonymous.verify_sign_up(email, latest_code(faucet, email))
    with PlatformClient(platform.url, registered.api_key.api_key) as client:
        assert client.get_me().email == email
        assert client.get_credits().balance == GRANT
        assert [key.key_id for key in client.list_keys().keys] == [registered.api_key.key_id]
