"""The real credit_service app on a fresh PostgreSQL database, and its factories."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from sqlalchemy.engine import make_url

from credit_service.app import create_app
from credit_service.settings import CreditSettings
from tests.support.credentials import service_auth

TOKEN = "test-internal-token-7f3a"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ADMIN = {**AUTH, "X-Gridweave-Role": "admin"}


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio only."""
    return "asyncio"


@pytest.fixture
def credit_settings(postgres_database: str, tmp_path: Any) -> CreditSettings:
    """Settings pointing credit_service at this test's own empty database."""
    return CreditSettings(
        database_url=postgres_database,
        **service_auth(TOKEN),
        state_dir=tmp_path,
        database_pool_size=30,
        database_max_overflow=30,
    )


@pytest.fixture
def credit_app(credit_settings: CreditSettings) -> Iterator[FastAPI]:
    """The real app, database migrated from empty."""
    app = create_app(credit_settings)
    try:
        yield app
    finally:
        app.state.database.dispose()


@pytest.fixture
async def client(credit_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to the real app in process (no auth headers preset)."""
    transport = httpx.ASGITransport(app=credit_app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://credit") as http:
        yield http


@dataclass(frozen=True)
class LedgerState:
    """What the database says, read directly with SQL."""

    balances: dict[str, int]
    held: dict[str, int]
    ledger_sums: dict[str, int]
    open_hold_sums: dict[str, int]
    entries_by_key: dict[str, int]


def read_ledger_state(database_url: str) -> LedgerState:
    """Read balances, held money, ledger sums and open holds straight from PostgreSQL."""
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT a.user_id, a.balance, a.held,"
            " (SELECT COALESCE(SUM(e.amount), 0) FROM ledger_entries e WHERE e.account_id = a.id),"
            " (SELECT COALESCE(SUM(h.amount), 0) FROM holds h"
            "   WHERE h.account_id = a.id AND h.status = 'open')"
            " FROM accounts a"
        ).fetchall()
        keys = conn.execute(
            "SELECT operation_key, COUNT(*) FROM ledger_entries GROUP BY operation_key"
        ).fetchall()
    return LedgerState(
        balances={row[0]: row[1] for row in rows},
        held={row[0]: row[2] for row in rows},
        ledger_sums={row[0]: int(row[3]) for row in rows},
        open_hold_sums={row[0]: int(row[4]) for row in rows},
        entries_by_key={row[0]: row[1] for row in keys},
    )


def assert_ledger_consistent(state: LedgerState) -> None:
    """Every balance equals its ledger sum, held equals open holds, nothing is negative."""
    for user_id, balance in state.balances.items():
        assert balance >= 0, user_id
        assert balance == state.ledger_sums[user_id], user_id
        assert state.held[user_id] == state.open_hold_sums[user_id], user_id
        assert 0 <= state.held[user_id] <= balance, user_id


async def mint(client: httpx.AsyncClient, user_id: str, amount: int, key: str) -> httpx.Response:
    """Mint as an admin; asserts success."""
    response = await client.post(
        f"/v1/accounts/{user_id}/mint",
        json={"amount": amount, "idempotency_key": key},
        headers=ADMIN,
    )
    assert response.status_code == 200, response.text
    return response


async def transfer(
    client: httpx.AsyncClient, from_user_id: str, to_user_id: str, amount: int, key: str = "t"
) -> httpx.Response:
    """``POST /v1/transfers`` as a service; the answer, whatever it is."""
    body = {
        "from_user_id": from_user_id,
        "to_user_id": to_user_id,
        "amount": amount,
        "idempotency_key": key,
    }
    return await client.post("/v1/transfers", json=body, headers=AUTH)
