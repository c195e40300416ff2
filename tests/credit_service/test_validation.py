"""Bad input: a clear 4xx naming the field, never a 500; auth before anything runs."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from credit_service.settings import CreditSettings
from tests.credit_service.conftest import AUTH, TOKEN, mint, read_ledger_state

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


class TestInternalToken:
    @pytest.mark.parametrize(
        "headers",
        [
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Basic {TOKEN}"},
            {"X-Gridweave-Token": TOKEN + "x"},
            {"X-Gridweave-Role": "admin"},
        ],
        ids=["none", "wrong-bearer", "wrong-scheme", "wrong-header", "role-without-token"],
    )
    async def test_without_the_token_nothing_runs(
        self,
        client: httpx.AsyncClient,
        credit_settings: CreditSettings,
        headers: dict[str, str],
    ) -> None:
        response = await client.post(
            "/v1/accounts/alice/mint", json={"amount": 5, "idempotency_key": "m"}, headers=headers
        )
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
        assert TOKEN not in response.text
        assert read_ledger_state(str(credit_settings.database_url)).balances == {}

    async def test_bad_body_without_token_is_still_401(self, client: httpx.AsyncClient) -> None:
        response = await client.post("/v1/holds", json={"amount": "lots"})
        assert response.status_code == 401

    async def test_the_token_header_works_too(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 5, "m")
        response = await client.get("/v1/accounts/alice", headers={"X-Gridweave-Token": TOKEN})
        assert response.status_code == 200

    async def test_health_and_metrics_need_no_token(self, client: httpx.AsyncClient) -> None:
        await client.get("/v1/accounts/alice")
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        metrics = (await client.get("/metrics")).text
        assert 'route="unauthorized",service="credit_service",status="401"' in metrics


class TestBadInput:
    @pytest.mark.parametrize(
        ("path", "body", "field"),
        [
            ("/v1/accounts/alice/deduct", {"amount": 1.5, "idempotency_key": "k"}, "amount"),
            ("/v1/accounts/alice/deduct", {"amount": "10", "idempotency_key": "k"}, "amount"),
            ("/v1/accounts/alice/deduct", {"amount": 0, "idempotency_key": "k"}, "amount"),
            ("/v1/accounts/alice/deduct", {"amount": -5, "idempotency_key": "k"}, "amount"),
            ("/v1/accounts/alice/deduct", {"amount": 10**19, "idempotency_key": "k"}, "amount"),
            ("/v1/accounts/alice/deduct", {"amount": 1}, "idempotency_key"),
            ("/v1/accounts/alice/deduct", {"amount": 1, "idempotency_key": ""}, "idempotency_key"),
            (
                "/v1/accounts/alice/deduct",
                {"amount": 1, "idempotency_key": "a b"},
                "idempotency_key",
            ),
            ("/v1/accounts/alice/deduct", {"amount": 1, "idempotency_key": "k", "memo": 1}, "memo"),
            ("/v1/holds", {"amount": 1, "idempotency_key": "k"}, "user_id"),
            (
                "/v1/holds",
                {"user_id": "a", "amount": 1, "idempotency_key": "k", "reference": ""},
                "reference",
            ),
            ("/v1/holds/1/capture", {"amount": -1, "idempotency_key": "k"}, "amount"),
            ("/v1/holds/0/capture", {"amount": 1, "idempotency_key": "k"}, "hold_id"),
            ("/v1/holds/abc/release", {"idempotency_key": "k"}, "hold_id"),
            ("/v1/settlements", {"amount": 1}, "reference"),
            (
                "/v1/transfers",
                {"from_user_id": "a", "amount": 1, "idempotency_key": "k"},
                "to_user_id",
            ),
            ("/v1/accounts/bad%20user/deduct", {"amount": 1, "idempotency_key": "k"}, "user_id"),
        ],
    )
    async def test_a_bad_field_is_422_naming_it(
        self, client: httpx.AsyncClient, path: str, body: dict[str, Any], field: str
    ) -> None:
        response = await client.post(path, json=body, headers=AUTH)  # acts as any role
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["code"] == "invalid_request"
        assert field in [item["field"] for item in error["fields"]]
        assert field in error["message"]

    @pytest.mark.parametrize("content", [b"{not json", b"[]", b"null", b""])
    async def test_a_body_that_is_not_an_object_is_422(
        self, client: httpx.AsyncClient, content: bytes
    ) -> None:
        response = await client.post(
            "/v1/holds", content=content, headers={**AUTH, "Content-Type": "application/json"}
        )
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "invalid_request"

    async def test_a_bad_query_parameter_is_422(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 5, "m")
        response = await client.get("/v1/accounts/alice/ledger?limit=0", headers=AUTH)
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "limit"

    async def test_an_unknown_route_is_a_json_404(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/nothing", headers=AUTH)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "http_404"
