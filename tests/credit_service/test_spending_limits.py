"""Spending limits: a hold past the per-job or the monthly cap is 402 ``spending_limit``
naming the cap, its limit, the month's spending and the hold; an admin's cap wins; over
HTTP on the real app and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from credit_service.settings import CreditSettings
from tests.credit_service.conftest import (
    ADMIN,
    AUTH,
    assert_ledger_consistent,
    mint,
    read_ledger_state,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def place(
    client: httpx.AsyncClient, user_id: str, amount: int, key: str, reference: str | None = None
) -> httpx.Response:
    """Place a hold (no assertion: tests check the answer)."""
    body: dict[str, Any] = {"user_id": user_id, "amount": amount, "idempotency_key": key}
    if reference is not None:
        body["reference"] = reference
    return await client.post("/v1/holds", json=body, headers=AUTH)


async def set_caps(
    client: httpx.AsyncClient, user_id: str, *, admin: bool = False, **caps: Any
) -> httpx.Response:
    """PUT the user's own caps (or, ``admin``, an admin's) as given."""
    path = "admin-spending-limits" if admin else "spending-limits"
    return await client.put(
        f"/v1/accounts/{user_id}/{path}", json=caps, headers=ADMIN if admin else AUTH
    )


async def settle(client: httpx.AsyncClient, user_id: str, reference: str, amount: int) -> None:
    """Settle a reference; asserts success."""
    body = {"reference": reference, "user_id": user_id, "amount": amount}
    response = await client.post("/v1/settlements", json=body, headers=AUTH)
    assert response.status_code == 200, response.text


def refusal(response: httpx.Response) -> tuple[str, str, int, int, int]:
    """(code, cap, limit, spent, asked) of a 402."""
    assert response.status_code == 402, response.text
    error = response.json()["error"]
    return error["code"], error["cap"], error["limit"], error["spent"], error["asked"]


def database(settings: CreditSettings) -> str:
    """A libpq connection string of the test's database."""
    url = make_url(str(settings.database_url)).set(drivername="postgresql")
    return url.render_as_string(False)


class TestPerJobCap:
    async def test_a_hold_past_it_is_402_naming_it_and_nothing_is_held(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 10_000, "m")
        assert (await set_caps(client, "alice", per_job_cap=500)).status_code == 200
        refused = await place(client, "alice", 501, "h1", reference="job-1")
        assert refusal(refused) == ("spending_limit", "per_job", 500, 0, 501)
        account = (await client.get("/v1/accounts/alice", headers=AUTH)).json()
        assert account["held"] == 0
        assert (await client.get("/v1/holds?reference_prefix=job-", headers=AUTH)).json()[
            "holds"
        ] == []
        # the refused key was not spent: the same key places a hold within the cap
        assert (await place(client, "alice", 500, "h1", reference="job-1")).status_code == 200
        assert_ledger_consistent(read_ledger_state(str(credit_settings.database_url)))


class TestMonthlyCap:
    async def test_holds_until_the_cap_then_402_with_spent_and_asked(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 10_000, "m")
        await set_caps(client, "alice", monthly_cap=1_000)
        assert (await place(client, "alice", 400, "h1", reference="job-1")).status_code == 200
        await settle(client, "alice", "job-1", 300)  # 300 charged, 100 back
        assert (await place(client, "alice", 400, "h2", reference="job-2")).status_code == 200
        deduct = {"amount": 50, "idempotency_key": "d"}
        assert (
            await client.post("/v1/accounts/alice/deduct", json=deduct, headers=AUTH)
        ).status_code == 200
        # spent: 300 settled + 50 deducted + 400 held = 750
        refused = await place(client, "alice", 251, "h3", reference="job-3")
        assert refusal(refused) == ("spending_limit", "monthly", 1_000, 750, 251)
        assert (await place(client, "alice", 250, "h3", reference="job-3")).status_code == 200
        assert refusal(await place(client, "alice", 1, "h4")) == (
            "spending_limit",
            "monthly",
            1_000,
            1_000,
            1,
        )
        limits = (await client.get("/v1/accounts/alice/spending-limits", headers=AUTH)).json()
        assert (limits["monthly_cap"], limits["spent"]) == (1_000, 1_000)
        assert limits["month_start"].endswith(("+00:00", "Z"))
        assert limits["month_start"][8:19] == "01T00:00:00"
        assert_ledger_consistent(read_ledger_state(str(credit_settings.database_url)))

    async def test_a_transfer_out_is_not_spending(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 10_000, "m")
        await mint(client, "bob", 1, "m-bob")
        await set_caps(client, "alice", monthly_cap=1_000)
        body = {"from_user_id": "alice", "to_user_id": "bob", "amount": 5_000}
        body["idempotency_key"] = "t"
        assert (await client.post("/v1/transfers", json=body, headers=AUTH)).status_code == 200
        assert (await place(client, "alice", 1_000, "h")).status_code == 200

    async def test_last_months_charges_do_not_count(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 10_000, "m")
        await place(client, "alice", 900, "h1", reference="job-1")
        await settle(client, "alice", "job-1", 900)
        await set_caps(client, "alice", monthly_cap=1_000)
        assert refusal(await place(client, "alice", 101, "h2"))[3] == 900
        # the settlement dated last month (the append-only trigger set aside for the test)
        with psycopg.connect(database(credit_settings)) as conn:
            conn.execute("ALTER TABLE ledger_entries DISABLE TRIGGER USER")
            conn.execute(
                "UPDATE ledger_entries SET created_at ="
                " date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
                " - interval '1 microsecond' WHERE kind = 'settlement'"
            )
            conn.execute("ALTER TABLE ledger_entries ENABLE TRIGGER USER")
        assert (await place(client, "alice", 1_000, "h2")).status_code == 200

    async def test_concurrent_holds_cannot_pass_it_together(
        self, client: httpx.AsyncClient, credit_settings: CreditSettings
    ) -> None:
        await mint(client, "alice", 100_000, "m")
        await set_caps(client, "alice", monthly_cap=500)
        answers = await asyncio.gather(
            *(place(client, "alice", 100, f"h{index}") for index in range(12))
        )
        codes = sorted(answer.status_code for answer in answers)
        assert codes == [200] * 5 + [402] * 7
        assert {refusal(a)[3] for a in answers if a.status_code == 402} == {500}
        state = read_ledger_state(str(credit_settings.database_url))
        assert state.held["alice"] == 500
        assert_ledger_consistent(state)


class TestWhoSetsWhat:
    async def test_the_admins_cap_wins_and_the_user_cannot_raise_it(
        self, client: httpx.AsyncClient
    ) -> None:
        await mint(client, "alice", 10_000, "m")
        await set_caps(client, "alice", monthly_cap=5_000, per_job_cap=1_000)
        admin = await set_caps(client, "alice", admin=True, monthly_cap=800, per_job_cap=300)
        assert admin.status_code == 200
        limits = admin.json()
        assert (limits["monthly_cap"], limits["per_job_cap"]) == (800, 300)
        assert (limits["user_monthly_cap"], limits["admin_monthly_cap"]) == (5_000, 800)
        assert refusal(await place(client, "alice", 301, "h"))[1:3] == ("per_job", 300)
        raised = await set_caps(client, "alice", monthly_cap=801)
        assert raised.status_code == 422
        assert raised.json()["error"]["fields"][0]["field"] == "monthly_cap"
        raised = await set_caps(client, "alice", per_job_cap=301)
        assert raised.json()["error"]["fields"][0]["field"] == "per_job_cap"
        # within the admin's: set; cleared (null) on the user's side, the admin's stays
        assert (await set_caps(client, "alice", monthly_cap=700)).json()["monthly_cap"] == 700
        cleared = (await set_caps(client, "alice")).json()
        assert (cleared["monthly_cap"], cleared["user_monthly_cap"]) == (800, None)

    async def test_an_admins_cap_needs_the_admin_role(self, client: httpx.AsyncClient) -> None:
        await mint(client, "alice", 10_000, "m")
        response = await client.put(
            "/v1/accounts/alice/admin-spending-limits",
            json={"monthly_cap": 1},
            headers={**AUTH, "X-Gridweave-Role": "platform"},
        )
        assert response.status_code == 403
        limits = (await client.get("/v1/accounts/alice/spending-limits", headers=AUTH)).json()
        assert limits["admin_monthly_cap"] is None

    async def test_setting_caps_opens_the_account(self, client: httpx.AsyncClient) -> None:
        assert (
            await client.get("/v1/accounts/new/spending-limits", headers=AUTH)
        ).status_code == 404
        response = await set_caps(client, "new", admin=True, monthly_cap=10)
        assert (response.status_code, response.json()["spent"]) == (200, 0)

    @pytest.mark.parametrize(
        ("field", "value"),
        [("monthly_cap", -1), ("per_job_cap", 1.5), ("monthly_cap", "5"), ("per_job_cap", True)],
    )
    async def test_a_bad_cap_is_422_naming_it(
        self, client: httpx.AsyncClient, field: str, value: Any
    ) -> None:
        response = await set_caps(client, "alice", **{field: value})
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"].endswith(field)
