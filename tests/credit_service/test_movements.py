"""Mint, deduct and transfer over HTTP, on the real app and a real PostgreSQL."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from psycopg.errors import DeadlockDetected
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from credit_service import queries
from credit_service.services import ledger
from credit_service.settings import CreditSettings
from tests.credit_service.conftest import (
    ADMIN,
    AUTH,
    assert_ledger_consistent,
    mint,
    read_ledger_state,
    transfer,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


class TestMint:
    async def test_mint_opens_the_account_and_writes_one_entry(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        body = (await mint(client, "alice", 5_000, "mint-1")).json()
        assert body["account"] == {
            "user_id": "alice",
            "balance": 5_000,
            "held": 0,
            "available": 5_000,
        }
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.entries_by_key == {"mint-1": 1}
        assert_ledger_consistent(state)

    @pytest.mark.parametrize("role", ["admin", "faucet"])
    async def test_admin_and_faucet_may_mint(self, client: httpx.AsyncClient, role: str) -> None:
        response = await client.post(
            "/v1/accounts/bob/mint",
            json={"amount": 1, "idempotency_key": f"m-{role}"},
            headers={**AUTH, "X-Gridweave-Role": role},
        )
        assert response.status_code == 200

    @pytest.mark.parametrize("role", ["gateway", "platform", "metering", "ADMINX"])
    async def test_other_roles_are_forbidden(
        self, client: httpx.AsyncClient, role: str | None
    ) -> None:
        headers = dict(AUTH) if role is None else {**AUTH, "X-Gridweave-Role": role}
        response = await client.post(
            "/v1/accounts/bob/mint", json={"amount": 1, "idempotency_key": "m"}, headers=headers
        )
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "forbidden"
        missing = await client.get("/v1/accounts/bob", headers=AUTH)
        assert missing.status_code == 404

    async def test_a_retry_replays_and_mints_once(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        first = await mint(client, "carol", 700, "same-key")
        second = await mint(client, "carol", 700, "same-key")
        assert second.json() == first.json()
        assert first.headers["Idempotent-Replayed"] == "false"
        assert second.headers["Idempotent-Replayed"] == "true"
        account = (await client.get("/v1/accounts/carol", headers=AUTH)).json()
        assert account["balance"] == 700

    async def test_same_key_other_parameters_is_a_conflict(self, client: httpx.AsyncClient) -> None:
        await mint(client, "dave", 700, "k")
        response = await client.post(
            "/v1/accounts/dave/mint", json={"amount": 701, "idempotency_key": "k"}, headers=ADMIN
        )
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "idempotency_conflict"


class TestDeduct:
    async def test_deduct_takes_from_the_balance(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 1_000, "m")
        response = await client.post(
            "/v1/accounts/alice/deduct", json={"amount": 400, "idempotency_key": "d"}, headers=AUTH
        )
        assert response.status_code == 200
        assert response.json()["account"]["balance"] == 600

    async def test_uncovered_deduct_is_402_with_balance_and_need(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 100, "m")
        response = await client.post(
            "/v1/accounts/alice/deduct", json={"amount": 101, "idempotency_key": "d"}, headers=AUTH
        )
        assert response.status_code == 402
        error = response.json()["error"]
        assert error["code"] == "insufficient_funds"
        assert (error["balance"], error["available"], error["needed"]) == (100, 100, 101)
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.balances == {"alice": 100}
        assert "d" not in state.entries_by_key

    async def test_a_refused_key_may_be_tried_again(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 100, "m1")
        body = {"amount": 150, "idempotency_key": "d"}
        refused = await client.post("/v1/accounts/alice/deduct", json=body, headers=AUTH)
        assert refused.status_code == 402
        await mint(client, "alice", 100, "m2")
        accepted = await client.post("/v1/accounts/alice/deduct", json=body, headers=AUTH)
        assert accepted.status_code == 200
        assert accepted.json()["account"]["balance"] == 50

    async def test_unknown_account_is_404(self, client: httpx.AsyncClient) -> None:
        response = await client.post(
            "/v1/accounts/nobody/deduct", json={"amount": 1, "idempotency_key": "d"}, headers=AUTH
        )
        assert response.status_code == 404
        assert response.json()["error"] == {
            "code": "account_not_found",
            "message": "no account for this user",
            "user_id": "nobody",
        }


class TestTransfer:
    async def test_transfer_moves_both_legs(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 1_000, "m1")
        await mint(client, "bob", 10, "m2")
        response = await transfer(client, "alice", "bob", 300)
        assert response.status_code == 200
        assert response.json()["from_account"]["balance"] == 700
        assert response.json()["to_account"]["balance"] == 310
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.entries_by_key["t"] == 2
        assert_ledger_consistent(state)
        ledger_page = (await client.get("/v1/accounts/bob/ledger", headers=AUTH)).json()
        assert ledger_page["entries"][0]["counterparty_user_id"] == "alice"

    async def test_a_failure_between_the_legs_rolls_back_both(
        self,
        client: httpx.AsyncClient,
        credit_settings: CreditSettings,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        await mint(client, "alice", 1_000, "m1")
        await mint(client, "bob", 10, "m2")
        legs_written: list[ledger.Posting] = []

        def fail_after_first_leg(posting: ledger.Posting, operation_key: str) -> None:
            legs_written.append(posting)
            raise RuntimeError("injected: the process dies between the two legs")

        monkeypatch.setattr(ledger, "_after_posting", fail_after_first_leg)
        transfer = {
            "from_user_id": "alice",
            "to_user_id": "bob",
            "amount": 300,
            "idempotency_key": "t",
        }
        failed = await client.post("/v1/transfers", json=transfer, headers=AUTH)
        assert failed.status_code == 500
        assert failed.json()["error"] == {"code": "internal", "message": "internal error"}
        assert len(legs_written) == 1  # the first leg was flushed to PostgreSQL, then it died
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.balances == {"alice": 1_000, "bob": 10}
        assert "t" not in state.entries_by_key
        assert_ledger_consistent(state)

        monkeypatch.undo()
        retried = await client.post("/v1/transfers", json=transfer, headers=AUTH)
        assert retried.status_code == 200
        assert retried.headers["Idempotent-Replayed"] == "false"
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.balances == {"alice": 700, "bob": 310}

    async def test_a_transaction_aborted_to_break_a_deadlock_is_run_again(
        self,
        client: httpx.AsyncClient,
        credit_settings: CreditSettings,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        await mint(client, "alice", 1_000, "m1")
        await mint(client, "bob", 10, "m2")
        aborted: list[str] = []

        def deadlock_once(posting: ledger.Posting, operation_key: str) -> None:
            if not aborted:
                aborted.append(operation_key)
                raise OperationalError("UPDATE accounts", {}, DeadlockDetected("deadlock"))

        monkeypatch.setattr(ledger, "_after_posting", deadlock_once)
        transfer = {"from_user_id": "alice", "to_user_id": "bob", "amount": 300}
        response = await client.post(
            "/v1/transfers", json={**transfer, "idempotency_key": "t"}, headers=AUTH
        )
        assert response.status_code == 200, response.text
        assert aborted == ["t"]
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.balances == {"alice": 700, "bob": 310}  # moved once, not twice
        assert state.entries_by_key["t"] == 2
        assert_ledger_consistent(state)

    async def test_other_database_errors_are_not_run_again(
        self, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        await mint(client, "alice", 1_000, "m1")
        attempts: list[str] = []

        def connection_lost(posting: ledger.Posting, operation_key: str) -> None:
            attempts.append(operation_key)
            raise OperationalError("UPDATE accounts", {}, Exception("server closed"))

        monkeypatch.setattr(ledger, "_after_posting", connection_lost)
        response = await client.post(
            "/v1/accounts/alice/deduct",
            json={"amount": 5, "idempotency_key": "d"},
            headers=AUTH,
        )
        assert response.status_code == 500
        assert attempts == ["d"]

    async def test_uncovered_transfer_moves_nothing(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 100, "m1")
        await mint(client, "bob", 0 + 1, "m2")
        response = await transfer(client, "alice", "bob", 101)
        assert response.status_code == 402
        assert read_ledger_state(str(credit_settings.database_url)).balances == {
            "alice": 100,
            "bob": 1,
        }

    async def test_transfer_to_an_unknown_user_is_404(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 100, "m1")
        response = await transfer(client, "alice", "ghost", 1)
        assert response.status_code == 404
        assert response.json()["error"]["user_id"] == "ghost"

    async def test_transfer_to_oneself_is_422(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 100, "m1")
        response = await transfer(client, "alice", "alice", 1)
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "invalid_request"
        assert [item["field"] for item in response.json()["error"]["fields"]] == ["to_user_id"]


def test_deciding_under_lock_waits_for_no_ledger_reference(
    credit_app: FastAPI, credit_settings: CreditSettings
) -> None:
    """Re-reading a refused account under lock must not wait for another transaction's
    ledger entry that merely names that account (a foreign key's key-share lock): with
    ``FOR UPDATE`` it did, and two transfers crossing such locks deadlocked."""
    assert credit_settings.database_url is not None
    engine = create_engine(credit_settings.database_url)
    try:
        with Session(engine) as setup:
            for user in ("payer", "payee"):
                queries.insert_account(setup, user_id=user)
            setup.commit()
            payer = queries.find_account(setup, user_id="payer")
            payee = queries.find_account(setup, user_id="payee")
            assert payer is not None and payee is not None
        with Session(engine) as open_transfer, Session(engine) as refused:
            # a transfer's first leg: the payee's entry names the payer, still uncommitted
            leg = queries.apply_posting(
                open_transfer,
                account_id=payee.id,
                amount=10,
                held=0,
                kind="transfer",
                operation_key="transfer-1",
                hold_id=None,
                counterparty_account_id=payer.id,
            )
            assert leg is not None
            refused.execute(text("SET LOCAL lock_timeout = '2s'"))
            locked = queries.lock_account(refused, account_id=payer.id)  # must not wait
            assert locked is not None and locked.balance == 0
            open_transfer.rollback()
            refused.rollback()
    finally:
        engine.dispose()
