"""What an adversarial caller found: ids past BIGINT, borrowed keys, balances past BIGINT."""

from __future__ import annotations

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from credit_service.settings import CreditSettings
from gridweave_clients.credit.models import MAX_AMOUNT, MAX_BALANCE
from tests.credit_service.conftest import (
    ADMIN,
    AUTH,
    assert_ledger_consistent,
    mint,
    read_ledger_state,
    transfer,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

PAST_BIGINT = 2**63  # one past PostgreSQL's largest BIGINT
LARGEST_BIGINT = 2**63 - 1


def _post_directly(settings: CreditSettings, user_id: str, amount: int) -> bool:
    """Post ``amount`` onto ``user_id`` with the ledger's own function; False if refused."""
    url = make_url(str(settings.database_url)).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(False)) as connection:
        row = connection.execute(
            "SELECT p.balance FROM accounts AS a, LATERAL ledger_apply_posting("
            "a.id, %s, 0, 'mint', 'test-direct', NULL, NULL) AS p WHERE a.user_id = %s",
            (amount, user_id),
        ).fetchone()
    return row is not None


class TestIdsPastBigint:
    async def test_a_ledger_page_before_an_id_past_bigint_is_422(
        self, client: httpx.AsyncClient
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        past = await client.get(
            "/v1/accounts/alice/ledger", params={"before_id": PAST_BIGINT}, headers=AUTH
        )
        largest = await client.get(
            "/v1/accounts/alice/ledger", params={"before_id": LARGEST_BIGINT}, headers=AUTH
        )
        assert past.status_code == 422
        assert [field["field"] for field in past.json()["error"]["fields"]] == ["before_id"]
        assert largest.status_code == 200
        assert [entry["amount"] for entry in largest.json()["entries"]] == [1_000]

    async def test_a_hold_id_past_bigint_is_422(self, client: httpx.AsyncClient) -> None:
        response = await client.get(f"/v1/holds/{PAST_BIGINT}", headers=AUTH)
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "hold_id"


class TestIdempotencyNamespaces:
    async def test_another_callers_key_is_not_theirs_to_claim(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        # the faucet's key for a grant, guessed and used first by another service
        key = "faucet:onboarding:0123abcd"
        await mint(client, "mallory", 10, "m-mallory")
        stolen = await client.post(
            "/v1/accounts/mallory/deduct",
            json={"amount": 1, "idempotency_key": key},
            headers={**AUTH, "X-Gridweave-Role": "metering"},
        )
        grant = {"amount": 500, "idempotency_key": key}
        faucet = {**AUTH, "X-Gridweave-Role": "faucet"}
        minted = await client.post("/v1/accounts/victim/mint", json=grant, headers=faucet)
        replayed = await client.post("/v1/accounts/victim/mint", json=grant, headers=faucet)

        assert stolen.status_code == 200
        assert minted.status_code == 200  # before: 409 idempotency_conflict, for ever
        assert minted.headers["Idempotent-Replayed"] == "false"
        assert replayed.headers["Idempotent-Replayed"] == "true"
        assert replayed.json() == minted.json()
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.balances == {"mallory": 9, "victim": 500}
        assert_ledger_consistent(state)

    async def test_one_caller_replays_its_own_key_per_operation(
        self, client: httpx.AsyncClient
    ) -> None:
        await mint(client, "alice", 1_000, "m")
        body = {"amount": 5, "idempotency_key": "k-1"}
        metering = {**AUTH, "X-Gridweave-Role": "metering"}
        first = await client.post("/v1/accounts/alice/deduct", json=body, headers=metering)
        again = await client.post("/v1/accounts/alice/deduct", json=body, headers=metering)
        other = await client.post(
            "/v1/accounts/alice/deduct", json={**body, "amount": 6}, headers=metering
        )
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.json() == first.json()
        assert other.status_code == 409
        assert other.json()["error"]["code"] == "idempotency_conflict"

    async def test_a_role_that_is_no_credentials_is_403(self, client: httpx.AsyncClient) -> None:
        # roles are bound to the credentials (their document names only well-formed ones)
        for role in ("r" * 65, "billing"):
            response = await client.post(
                "/v1/accounts/alice/deduct",
                json={"amount": 1, "idempotency_key": "k"},
                headers={**AUTH, "X-Gridweave-Role": role},
            )
            assert response.status_code == 403
            assert response.json()["error"]["code"] == "forbidden"


class TestMaximumBalance:
    async def test_a_mint_past_the_maximum_is_409_and_moves_nothing(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "whale", 1, "m-1")
        assert _post_directly(credit_settings, "whale", MAX_BALANCE - 6)  # now MAX - 5
        refused = await client.post(
            "/v1/accounts/whale/mint",
            json={"amount": 10, "idempotency_key": "m-2"},
            headers=ADMIN,
        )
        exact = await client.post(
            "/v1/accounts/whale/mint",
            json={"amount": 5, "idempotency_key": "m-3"},
            headers=ADMIN,
        )

        assert refused.status_code == 409
        assert refused.json()["error"] | {"message": ""} == {
            "code": "balance_limit_exceeded",
            "message": "",
            "user_id": "whale",
            "balance": MAX_BALANCE - 5,
            "amount": 10,
            "max_balance": MAX_BALANCE,
        }
        assert exact.status_code == 200
        assert exact.json()["account"]["balance"] == MAX_BALANCE
        state = read_ledger_state(str(credit_settings.database_url))
        assert "m-2" not in state.entries_by_key
        assert_ledger_consistent(state)

    async def test_mints_toward_bigint_are_refused_not_500(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "whale", 1, "m-1")
        # the ledger's function itself refuses to pass the maximum (BIGINT is far above it)
        assert not _post_directly(credit_settings, "whale", LARGEST_BIGINT - 1)
        assert _post_directly(credit_settings, "whale", MAX_BALANCE - 1)
        response = await client.post(
            "/v1/accounts/whale/mint",
            json={"amount": MAX_AMOUNT, "idempotency_key": "m-big"},
            headers=ADMIN,
        )
        assert response.status_code == 409
        assert read_ledger_state(str(credit_settings.database_url)).balances == {
            "whale": MAX_BALANCE
        }

    async def test_a_transfer_into_a_full_account_is_409(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "whale", 1, "m-1")
        await mint(client, "payer", 100, "m-2")
        assert _post_directly(credit_settings, "whale", MAX_BALANCE - 1)
        response = await transfer(client, "payer", "whale", 1, "t-1")
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "balance_limit_exceeded"
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.balances == {"whale": MAX_BALANCE, "payer": 100}


class TestSettlementNamesThePayer:
    async def test_a_hold_of_another_user_is_409_and_nothing_moves(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "victor", 1_000, "m")
        await client.post(
            "/v1/holds",
            json={"user_id": "victor", "amount": 600, "idempotency_key": "h", "reference": "j"},
            headers=AUTH,
        )
        wrong = await client.post(
            "/v1/settlements",
            json={"reference": "j", "user_id": "ursula", "amount": 100},
            headers=AUTH,
        )
        right = await client.post(
            "/v1/settlements",
            json={"reference": "j", "user_id": "victor", "amount": 100},
            headers=AUTH,
        )
        assert wrong.status_code == 409
        assert wrong.json()["error"] | {"message": ""} == {
            "code": "hold_owner_mismatch",
            "message": "",
            "reference": "j",
            "hold_user_id": "victor",
            "user_id": "ursula",
        }
        assert right.status_code == 200  # the refusal left the settlement's key unclaimed
        assert right.json()["account"]["balance"] == 900


class TestDatabaseAgreesWithTheWireModels:
    async def test_the_maximum_balance_is_the_check_constraint(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 1, "m")
        url = make_url(str(credit_settings.database_url)).set(drivername="postgresql")
        with psycopg.connect(url.render_as_string(False)) as connection:
            definition = connection.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conname = 'balance_within_maximum'"
            ).fetchone()
        assert definition is not None
        assert str(MAX_BALANCE) in definition[0]
