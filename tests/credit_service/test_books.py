"""``GET /v1/books``: every account against its ledger and its open holds, in one snapshot.

Balanced after real money moves; an account whose figures were changed behind the ledger's
back (straight in the database) is listed with all its figures; the route needs the
internal token.
"""

from __future__ import annotations

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from credit_service.settings import CreditSettings
from tests.credit_service.conftest import AUTH, mint
from tests.credit_service.test_holds import place

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def _books(client: httpx.AsyncClient) -> dict[str, object]:
    answer = await client.get("/v1/books", headers=AUTH)
    assert answer.status_code == 200, answer.text
    books: dict[str, object] = answer.json()
    return books


def _behind_the_ledger(settings: CreditSettings, statement: str) -> None:
    """Change an account straight in the database, as no operation of the service can."""
    url = make_url(str(settings.database_url)).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(False)) as connection:
        connection.execute(statement)


async def _moved(client: httpx.AsyncClient) -> None:
    """Alice: minted 1,000, 250 captured of a 600 hold, 300 still held; Bob: minted 50."""
    await mint(client, "alice", 1_000, "m-a")
    await mint(client, "bob", 50, "m-b")
    captured = (await place(client, "alice", 600, "h-1", reference="job-1")).json()["hold_id"]
    answer = await client.post(
        f"/v1/holds/{captured}/capture", json={"amount": 250, "idempotency_key": "c"}, headers=AUTH
    )
    assert answer.status_code == 200, answer.text
    assert (await place(client, "alice", 300, "h-2", reference="job-2")).status_code == 200


def _alice(*, balance: int, open_held: int) -> dict[str, object]:
    """Alice's figures as the books list them: her ledger says 750, 300 held."""
    return {
        "user_id": "alice",
        "balance": balance,
        "ledger_total": 750,
        "last_balance_after": 750,
        "held": 300,
        "open_held": open_held,
    }


async def test_the_books_hold_after_real_moves(client: httpx.AsyncClient) -> None:
    await _moved(client)
    assert await _books(client) == {
        "accounts": 2,
        "open_holds": 1,
        "open_held": 300,
        "out_of_balance": [],
    }


async def test_a_balance_changed_behind_the_ledger_is_listed(
    client: httpx.AsyncClient, credit_settings: CreditSettings
) -> None:
    await _moved(client)
    _behind_the_ledger(
        credit_settings, "UPDATE accounts SET balance = balance + 7 WHERE user_id = 'alice'"
    )
    books = await _books(client)
    assert books["out_of_balance"] == [_alice(balance=757, open_held=300)]


async def test_held_money_without_its_hold_is_listed(
    client: httpx.AsyncClient, credit_settings: CreditSettings
) -> None:
    await _moved(client)
    _behind_the_ledger(
        credit_settings, "UPDATE holds SET status = 'released' WHERE reference = 'job-2'"
    )
    books = await _books(client)
    assert (books["open_holds"], books["open_held"]) == (0, 0)
    assert books["out_of_balance"] == [_alice(balance=750, open_held=0)]


async def test_the_books_need_the_internal_token(client: httpx.AsyncClient) -> None:
    assert (await client.get("/v1/books")).status_code == 401
    wrong = {"Authorization": "Bearer not-the-token"}
    assert (await client.get("/v1/books", headers=wrong)).status_code == 401
