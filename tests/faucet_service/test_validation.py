"""Auth, health, metrics and 4xx answers that name the bad field."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.faucet_service.factories import ADMIN_HEADERS, new_address, new_email, unique


def _bad_fields(response: httpx.Response) -> list[str]:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    return [item["field"] for item in error["fields"]]


class TestAuth:
    @pytest.mark.parametrize(
        ("method", "path"),
        [
            ("POST", "/v1/signups"),
            ("POST", "/v1/signups/verify"),
            ("POST", "/v1/refills"),
            ("GET", "/v1/outbox"),
        ],
    )
    def test_every_route_needs_the_internal_token(
        self, faucet: httpx.Client, method: str, path: str
    ) -> None:
        response = httpx.request(method, faucet.base_url.join(path), json={})

        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"

    def test_healthz_and_metrics_need_no_token(self, faucet: httpx.Client) -> None:
        health = httpx.get(faucet.base_url.join("/healthz"))
        metrics = httpx.get(faucet.base_url.join("/metrics"))

        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        assert 'service="faucet_service"' in metrics.text


class TestBadInput:
    @pytest.mark.parametrize(
        ("email", "field"),
        [
            ("not-an-email", "email"),
            ("two@@example.com", "email"),
            ("user@localhost", "email"),
            ("", "email"),
            (f"{'a' * 250}@example.com", "email"),
            (42, "email"),
        ],
    )
    def test_a_bad_email_is_named(self, faucet: httpx.Client, email: Any, field: str) -> None:
        response = faucet.post(
            "/v1/signups",
            json={"email": email, "user_id": unique("user")},
            headers=new_address(),
        )

        assert _bad_fields(response) == [field]

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"user_id": "bad id with spaces"}, "user_id"),
            ({"colour": "blue"}, "colour"),
        ],
    )
    def test_other_sign_up_fields_are_named(
        self, faucet: httpx.Client, body: dict[str, Any], field: str
    ) -> None:
        response = faucet.post(
            "/v1/signups",
            json={"email": new_email(), "user_id": unique("user"), **body},
            headers=new_address(),
        )

        assert _bad_fields(response) == [field]

    @pytest.mark.parametrize("code", ["12345", "1234567", "abcdef", 123456])
    def test_a_malformed_code_is_named(self, faucet: httpx.Client, code: Any) -> None:
        response = faucet.post(
            "/v1/signups/verify",
            json={"email": new_email(), "user_id": unique("user"), "code": code},
            headers=new_address(),
        )

        assert _bad_fields(response) == ["code"]

    @pytest.mark.parametrize(
        ("path", "body", "field"),
        [
            ("/v1/signups", {"email": "a\x00b@example.com", "user_id": "u"}, "email"),
            ("/v1/signups", {"email": "ab@example.com", "user_id": "u\x00"}, "user_id"),
            (
                "/v1/signups/verify",
                {"email": "a\x00b@example.com", "user_id": "u", "code": "123456"},
                "email",
            ),
            (
                "/v1/signups/verify",
                {"email": "ab@example.com", "user_id": "u\x00", "code": "123456"},
                "user_id",
            ),
            ("/v1/refills", {"user_id": "u\x00"}, "user_id"),
        ],
    )
    def test_a_nul_byte_in_any_string_is_named(
        self, faucet: httpx.Client, path: str, body: dict[str, Any], field: str
    ) -> None:
        response = faucet.post(path, json=body, headers=new_address())

        assert _bad_fields(response) == [field]

    def test_a_nul_byte_in_the_outbox_recipient_is_named(self, faucet: httpx.Client) -> None:
        response = faucet.get(
            "/v1/outbox", params={"recipient": "a\x00b@example.com"}, headers=ADMIN_HEADERS
        )

        assert _bad_fields(response) == ["recipient"]

    def test_a_verification_needs_the_user(self, faucet: httpx.Client) -> None:
        response = faucet.post(
            "/v1/signups/verify",
            json={"email": new_email(), "code": "123456"},
            headers=new_address(),
        )

        assert _bad_fields(response) == ["user_id"]

    def test_a_bad_client_address_header_is_named(self, faucet: httpx.Client) -> None:
        response = faucet.post(
            "/v1/refills",
            json={"user_id": unique("user")},
            headers={"X-Gridweave-Client-Address": "not-an-ip"},
        )

        assert _bad_fields(response) == ["X-Gridweave-Client-Address"]

    def test_a_refill_needs_a_user(self, faucet: httpx.Client) -> None:
        response = faucet.post("/v1/refills", json={}, headers=new_address())

        assert _bad_fields(response) == ["user_id"]
