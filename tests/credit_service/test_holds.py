"""Holds: place, capture part, release the rest, settle by reference; over HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from credit_service.services.holds import settlement_key
from credit_service.settings import CreditSettings
from tests.credit_service.conftest import AUTH, assert_ledger_consistent, mint, read_ledger_state

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def place(
    client: httpx.AsyncClient, user_id: str, amount: int, key: str, reference: str | None = None
) -> httpx.Response:
    """Place a hold (no assertion: tests check the answer)."""
    body: dict[str, Any] = {"user_id": user_id, "amount": amount, "idempotency_key": key}
    if reference is not None:
        body["reference"] = reference
    return await client.post("/v1/holds", json=body, headers=AUTH)


class TestPlaceHold:
    async def test_a_hold_lowers_available_not_balance(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 1_000, "m")
        response = await place(client, "alice", 600, "h")
        assert response.status_code == 200
        body = response.json()
        assert (body["status"], body["amount"], body["captured"]) == ("open", 600, 0)
        assert body["account"] == {
            "user_id": "alice",
            "balance": 1_000,
            "held": 600,
            "available": 400,
        }

    async def test_an_uncovered_hold_is_402_naming_balance_and_need(
        self, client: httpx.AsyncClient
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        assert (await place(client, "alice", 600, "h1")).status_code == 200
        refused = await place(client, "alice", 600, "h2")
        assert refused.status_code == 402
        error = refused.json()["error"]
        assert error["code"] == "insufficient_funds"
        assert (error["balance"], error["held"], error["available"], error["needed"]) == (
            1_000,
            600,
            400,
            600,
        )

    async def test_a_deduct_cannot_spend_held_money(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 1_000, "m")
        await place(client, "alice", 900, "h")
        response = await client.post(
            "/v1/accounts/alice/deduct", json={"amount": 101, "idempotency_key": "d"}, headers=AUTH
        )
        assert response.status_code == 402

    async def test_a_reference_carries_one_hold_only(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 1_000, "m")
        assert (await place(client, "alice", 10, "h1", reference="job-1")).status_code == 200
        second = await place(client, "alice", 10, "h2", reference="job-1")
        assert second.status_code == 409
        assert second.json()["error"]["code"] == "reference_in_use"
        account = (await client.get("/v1/accounts/alice", headers=AUTH)).json()
        assert account["held"] == 10

    async def test_a_hold_on_an_unknown_account_is_404(self, client: httpx.AsyncClient) -> None:
        assert (await place(client, "ghost", 10, "h")).status_code == 404


class TestCaptureAndRelease:
    async def test_capture_part_releases_the_rest(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        hold_id = (await place(client, "alice", 600, "h")).json()["hold_id"]
        response = await client.post(
            f"/v1/holds/{hold_id}/capture",
            json={"amount": 250, "idempotency_key": "c"},
            headers=AUTH,
        )
        assert response.status_code == 200
        body = response.json()
        assert (body["status"], body["captured"], body["released"]) == ("captured", 250, 350)
        assert body["account"] == {"user_id": "alice", "balance": 750, "held": 0, "available": 750}
        assert_ledger_consistent(read_ledger_state(str(credit_settings.database_url)))

    async def test_a_closed_hold_cannot_be_captured_again(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 1_000, "m")
        hold_id = (await place(client, "alice", 600, "h")).json()["hold_id"]
        capture = {"amount": 100, "idempotency_key": "c1"}
        assert (
            await client.post(f"/v1/holds/{hold_id}/capture", json=capture, headers=AUTH)
        ).status_code == 200
        again = await client.post(
            f"/v1/holds/{hold_id}/capture",
            json={"amount": 100, "idempotency_key": "c2"},
            headers=AUTH,
        )
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "hold_not_open"

    async def test_capture_beyond_the_hold_is_refused(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 1_000, "m")
        hold_id = (await place(client, "alice", 600, "h")).json()["hold_id"]
        response = await client.post(
            f"/v1/holds/{hold_id}/capture",
            json={"amount": 601, "idempotency_key": "c"},
            headers=AUTH,
        )
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "capture_exceeds_hold"

    async def test_release_gives_everything_back(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 1_000, "m")
        hold_id = (await place(client, "alice", 600, "h")).json()["hold_id"]
        response = await client.post(
            f"/v1/holds/{hold_id}/release", json={"idempotency_key": "r"}, headers=AUTH
        )
        assert response.status_code == 200
        assert response.json()["status"] == "released"
        assert response.json()["released"] == 600
        assert response.json()["account"]["available"] == 1_000
        fetched = (await client.get(f"/v1/holds/{hold_id}", headers=AUTH)).json()
        assert fetched["status"] == "released"

    async def test_unknown_hold_is_404(self, client: httpx.AsyncClient) -> None:
        response = await client.post(
            "/v1/holds/999/capture", json={"amount": 1, "idempotency_key": "c"}, headers=AUTH
        )
        assert response.status_code == 404
        assert (await client.get("/v1/holds/999", headers=AUTH)).status_code == 404


class TestSettlement:
    async def test_settle_by_reference_exactly_once(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        await place(client, "alice", 600, "h", reference="job-42")
        settle = {"reference": "job-42", "user_id": "alice", "amount": 123}
        first = await client.post("/v1/settlements", json=settle, headers=AUTH)
        replay = await client.post("/v1/settlements", json=settle, headers=AUTH)
        assert first.status_code == replay.status_code == 200
        assert replay.json() == first.json()
        assert replay.headers["Idempotent-Replayed"] == "true"
        assert first.json()["account"]["balance"] == 877
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.entries_by_key[settlement_key("job-42")] == 1
        assert state.balances == {"alice": 877}

    async def test_another_call_cannot_claim_a_settlements_key(
        self, client: httpx.AsyncClient
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        await place(client, "alice", 600, "h", reference="job-7")
        deduct = {"amount": 5, "idempotency_key": "settlement:job-7"}
        taken = await client.post("/v1/accounts/alice/deduct", json=deduct, headers=AUTH)
        assert taken.status_code == 200
        settle = {"reference": "job-7", "user_id": "alice", "amount": 100}
        settled = await client.post("/v1/settlements", json=settle, headers=AUTH)
        assert settled.status_code == 200
        assert settled.json()["account"]["balance"] == 895

    async def test_a_reference_of_the_longest_length_settles(
        self, client: httpx.AsyncClient
    ) -> None:
        reference = "j" * 200
        await mint(client, "alice", 1_000, "m")
        assert (await place(client, "alice", 600, "h", reference=reference)).status_code == 200
        settle = {"reference": reference, "user_id": "alice", "amount": 100}
        settled = await client.post("/v1/settlements", json=settle, headers=AUTH)
        assert settled.status_code == 200
        assert settled.json()["captured"] == 100

    async def test_a_different_amount_for_a_settled_job_is_409(
        self, client: httpx.AsyncClient
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        await place(client, "alice", 600, "h", reference="job-42")
        await client.post(
            "/v1/settlements",
            json={"reference": "job-42", "user_id": "alice", "amount": 1},
            headers=AUTH,
        )
        other = await client.post(
            "/v1/settlements",
            json={"reference": "job-42", "user_id": "alice", "amount": 2},
            headers=AUTH,
        )
        assert other.status_code == 409
        assert other.json()["error"]["code"] == "idempotency_conflict"

    async def test_settling_zero_releases_the_hold(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 1_000, "m")
        await place(client, "alice", 600, "h", reference="job-7")
        response = await client.post(
            "/v1/settlements",
            json={"reference": "job-7", "user_id": "alice", "amount": 0},
            headers=AUTH,
        )
        assert response.json()["status"] == "released"
        assert response.json()["account"]["balance"] == 1_000

    async def test_unknown_reference_is_404(self, client: httpx.AsyncClient) -> None:
        response = await client.post(
            "/v1/settlements",
            json={"reference": "job-none", "user_id": "alice", "amount": 1},
            headers=AUTH,
        )
        assert response.status_code == 404
        assert response.json()["error"]["reference"] == "job-none"

    async def test_the_database_built_answer_matches_the_hold_schema(
        self, client: httpx.AsyncClient
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        placed = (await place(client, "alice", 600, "h", reference="job-9")).json()
        answer = await client.post(
            "/v1/settlements",
            json={"reference": "job-9", "user_id": "alice", "amount": 250},
            headers=AUTH,
        )
        assert answer.headers["content-type"] == "application/json"
        assert answer.headers["Idempotent-Replayed"] == "false"
        # GET builds the same hold through HoldResponse: the two must agree field for field
        fetched = await client.get(f"/v1/holds/{placed['hold_id']}", headers=AUTH)
        assert answer.json() == fetched.json()
        assert answer.json()["released"] == 350

    async def test_a_hold_closed_through_the_hold_routes_is_409(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        hold_id = (await place(client, "alice", 600, "h", reference="job-5")).json()["hold_id"]
        await client.post(
            f"/v1/holds/{hold_id}/release", json={"idempotency_key": "r"}, headers=AUTH
        )
        response = await client.post(
            "/v1/settlements",
            json={"reference": "job-5", "user_id": "alice", "amount": 1},
            headers=AUTH,
        )
        assert response.status_code == 409
        assert response.json()["error"] | {"message": ""} == {
            "code": "hold_not_open",
            "message": "",
            "hold_id": hold_id,
            "status": "released",
        }
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.balances == {"alice": 1_000}  # the refused settlement moved nothing
        assert settlement_key("job-5") not in state.entries_by_key

    async def test_more_than_the_hold_is_409_and_the_key_stays_usable(
        self, client: httpx.AsyncClient
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        hold_id = (await place(client, "alice", 600, "h", reference="job-6")).json()["hold_id"]
        too_much = await client.post(
            "/v1/settlements",
            json={"reference": "job-6", "user_id": "alice", "amount": 601},
            headers=AUTH,
        )
        assert too_much.status_code == 409
        error = too_much.json()["error"]
        assert (error["code"], error["hold_id"], error["hold_amount"], error["requested"]) == (
            "capture_exceeds_hold",
            hold_id,
            600,
            601,
        )
        retried = await client.post(
            "/v1/settlements",
            json={"reference": "job-6", "user_id": "alice", "amount": 600},
            headers=AUTH,
        )
        assert retried.status_code == 200
        assert retried.json()["status"] == "captured"

    async def test_a_connection_the_server_dropped_is_replaced(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        await place(client, "alice", 100, "h1", reference="job-1")
        await place(client, "alice", 100, "h2", reference="job-2")
        settle = {"reference": "job-1", "user_id": "alice", "amount": 10}
        assert (await client.post("/v1/settlements", json=settle, headers=AUTH)).status_code == 200
        conninfo = make_url(str(credit_settings.database_url)).set(drivername="postgresql")
        with psycopg.connect(conninfo.render_as_string(False), autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert killed is not None and killed[0] >= 1  # the kept settlement connection too
        settle = {"reference": "job-2", "user_id": "alice", "amount": 20}
        response = await client.post("/v1/settlements", json=settle, headers=AUTH)
        assert response.status_code == 200
        assert response.json()["account"]["balance"] == 970


class TestListOpenHolds:
    async def test_open_holds_by_literal_prefix_paged_oldest_first(
        self, client: httpx.AsyncClient
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        for index, reference in enumerate(["ep:a:1:0", "ep:a:1:1", "ep:b:2:0", "job-1", "epXa"]):
            assert (await place(client, "alice", 10, f"h{index}", reference)).status_code == 200
        settled = await client.post(
            "/v1/settlements",
            json={"reference": "ep:a:1:0", "user_id": "alice", "amount": 4},
            headers=AUTH,
        )
        assert settled.status_code == 200

        first = await client.get(
            "/v1/holds", params={"reference_prefix": "ep:", "limit": 1}, headers=AUTH
        )
        assert first.status_code == 200
        page = first.json()
        assert [h["reference"] for h in page["holds"]] == ["ep:a:1:1"]
        assert page["holds"][0]["user_id"] == "alice" and page["holds"][0]["amount"] == 10
        rest = await client.get(
            "/v1/holds",
            params={"reference_prefix": "ep:", "after_id": page["next_after_id"]},
            headers=AUTH,
        )
        assert [h["reference"] for h in rest.json()["holds"]] == ["ep:b:2:0"]
        assert rest.json()["next_after_id"] is None
        # "_" and "%" are literal: a pattern character matches only itself
        like = await client.get("/v1/holds", params={"reference_prefix": "ep_"}, headers=AUTH)
        assert like.json()["holds"] == []

    async def test_a_missing_prefix_is_422_naming_it(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/holds", headers=AUTH)
        assert response.status_code == 422
        assert "reference_prefix" in response.text
