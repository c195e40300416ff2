"""The credit client, blocking and asyncio, against the real credit_service."""

from __future__ import annotations

import asyncio
import inspect
import uuid

import httpx
import pytest

from gridweave_clients import (
    AsyncInternalClient,
    Conflict,
    Forbidden,
    InternalClient,
    InvalidRequest,
    NotFound,
    PaymentRequired,
)
from gridweave_clients.credit import AsyncCreditClient, CreditClient
from gridweave_clients.faucet import AsyncFaucetClient, FaucetClient
from gridweave_clients.gateway import AsyncGatewayClient, GatewayClient
from gridweave_clients.metering import AsyncMeteringClient, MeteringClient
from tests.gridweave_clients.drivers import RETRY, CountingTransport
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer


def _user() -> str:
    return f"user-{uuid.uuid4().hex[:10]}"


def _admin(credit: CreditServer) -> CreditClient:
    return CreditClient(credit.url, INTERNAL_TOKEN, retry=RETRY)  # acts as any role


class TestBlockingCreditClient:
    def test_accounts_movements_and_the_ledger(self, credit: CreditServer) -> None:
        alice, bob = _user(), _user()
        with _admin(credit) as client:
            opened = client.open_account(alice)
            client.open_account(bob)
            minted = client.mint(alice, amount=1_000, idempotency_key=f"m:{alice}")
            replay = client.mint(alice, amount=1_000, idempotency_key=f"m:{alice}")
            deducted = client.deduct(alice, amount=100, idempotency_key=f"d:{alice}")
            moved = client.transfer(
                from_user_id=alice, to_user_id=bob, amount=300, idempotency_key=f"t:{alice}"
            )
            ledger = client.list_ledger(alice, limit=2)
            older = client.list_ledger(alice, before_id=ledger.next_before_id)

        assert (opened.balance, opened.available) == (0, 0)
        assert minted.account.balance == 1_000
        assert replay == minted
        assert deducted.account.balance == 900
        assert (moved.from_account.balance, moved.to_account.balance) == (600, 300)
        assert [entry.amount for entry in ledger.entries + older.entries] == [-300, -100, 1_000]
        assert credit.ledger_amounts(alice) == [-300, -100, 1_000]

    def test_holds_capture_release_and_settle(self, credit: CreditServer) -> None:
        user = _user()
        credit.fund(user, 10_000)
        with _admin(credit) as client:
            captured = client.place_hold(user, amount=1_000, idempotency_key=f"h1:{user}")
            client.capture_hold(captured.hold_id, amount=400, idempotency_key=f"c:{user}")
            released = client.place_hold(user, amount=2_000, idempotency_key=f"h2:{user}")
            client.release_hold(released.hold_id, idempotency_key=f"r:{user}")
            replayed = client.place_hold(user, amount=2_000, idempotency_key=f"h2:{user}")
            # the header says it: the answer repeats the placement's, though it was released
            assert (released.replayed, replayed.replayed) == (False, True)
            assert replayed.hold_id == released.hold_id and replayed.status == "open"
            job = client.place_hold(
                user, amount=500, idempotency_key=f"h3:{user}", reference=f"job-{user}"
            )
            settled = client.settle(reference=f"job-{user}", user_id=user, amount=200)
            again = client.settle(reference=f"job-{user}", user_id=user, amount=200)
            read = client.get_hold(job.hold_id)

        assert client.closed
        assert (settled.status, settled.captured, settled.released) == ("captured", 200, 300)
        assert again == settled
        assert read.status == "captured"
        assert credit.account(user) == {
            "user_id": user,
            "balance": 10_000 - 400 - 200,
            "held": 0,
            "available": 10_000 - 400 - 200,
        }

    def test_refusals_are_typed(self, credit: CreditServer) -> None:
        user = _user()
        credit.fund(user, 50)
        with _admin(credit) as client:
            with pytest.raises(NotFound) as missing:
                client.get_account(_user())
            with pytest.raises(PaymentRequired) as short:
                client.deduct(user, amount=80, idempotency_key=f"d:{user}")
            client.deduct(user, amount=10, idempotency_key=f"k:{user}")
            with pytest.raises(Conflict) as reused:
                client.deduct(user, amount=11, idempotency_key=f"k:{user}")
            with pytest.raises(InvalidRequest) as same:
                client.transfer(
                    from_user_id=user, to_user_id=user, amount=1, idempotency_key=f"t:{user}"
                )

        assert missing.value.code == "account_not_found"
        assert short.value.code == "insufficient_funds"
        assert (short.value.details["available"], short.value.details["needed"]) == (50, 80)
        assert reused.value.code == "idempotency_conflict"
        assert same.value.field == "to_user_id"

    def test_spending_limits_are_set_read_and_refuse_a_hold(self, credit: CreditServer) -> None:
        user = _user()
        credit.fund(user, 10_000)
        with _admin(credit) as client:
            client.set_admin_spending_limits(user, monthly_cap=900, per_job_cap=None)
            limits = client.set_spending_limits(user, monthly_cap=600, per_job_cap=200)
            with pytest.raises(PaymentRequired) as capped:
                client.place_hold(user, amount=201, idempotency_key=f"h:{user}")
            with pytest.raises(InvalidRequest) as raised:
                client.set_spending_limits(user, monthly_cap=901, per_job_cap=None)
            read = client.get_spending_limits(user)

        assert (limits.monthly_cap, limits.per_job_cap, limits.admin_monthly_cap) == (600, 200, 900)
        assert capped.value.code == "spending_limit"
        assert capped.value.details["cap"] == "per_job"
        assert raised.value.field == "monthly_cap"
        assert read == limits

    def test_only_admin_and_faucet_may_mint(self, credit: CreditServer) -> None:
        with CreditClient(credit.url, INTERNAL_TOKEN, role="metering") as client:
            with pytest.raises(Forbidden):
                client.mint(_user(), amount=1, idempotency_key=uuid.uuid4().hex)

    @pytest.mark.parametrize(
        ("arguments", "fields"),
        [
            ({"user_id": "", "amount": 1}, ["user_id"]),
            ({"user_id": "a b", "amount": 0}, ["user_id", "amount"]),
            ({"user_id": "u", "amount": True}, ["amount"]),
            ({"user_id": "u", "amount": 10**16}, ["amount"]),
        ],
    )
    def test_bad_arguments_are_refused_before_sending(
        self, arguments: dict[str, object], fields: list[str]
    ) -> None:
        transport = CountingTransport(httpx.Response(500))
        client = CreditClient("http://credit", INTERNAL_TOKEN, transport=transport)

        with pytest.raises(InvalidRequest) as raised:
            client.mint(idempotency_key="k", **arguments)  # type: ignore[arg-type]

        assert [item["field"] for item in raised.value.fields] == fields
        assert raised.value.operation == "mint (not sent)"
        assert transport.requests == []


class TestAsyncCreditClient:
    def test_the_same_calls_awaited(self, credit: CreditServer) -> None:
        user = _user()

        async def run() -> tuple[int, int, str]:
            async with AsyncCreditClient(credit.url, INTERNAL_TOKEN) as client:  # any role
                await client.mint(user, amount=700, idempotency_key=f"m:{user}")
                hold = await client.place_hold(
                    user, amount=300, idempotency_key=f"h:{user}", reference=f"job-{user}"
                )
                settled = await client.settle(reference=f"job-{user}", user_id=user, amount=100)
                account = await client.get_account(user)
                with pytest.raises(NotFound):
                    await client.get_hold(hold.hold_id + 10**9)
            return account.balance, account.held, settled.status

        assert asyncio.run(run()) == (600, 0, "captured")


@pytest.mark.parametrize(
    ("blocking_class", "async_class"),
    [
        (CreditClient, AsyncCreditClient),
        (MeteringClient, AsyncMeteringClient),
        (FaucetClient, AsyncFaucetClient),
        (GatewayClient, AsyncGatewayClient),
    ],
)
def test_blocking_and_asyncio_clients_have_the_same_methods(
    blocking_class: type[InternalClient], async_class: type[AsyncInternalClient]
) -> None:
    blocking, awaited = blocking_class("http://x", "t"), async_class("http://x", "t")
    names = set(vars(blocking_class)) - {"service", "__module__", "__doc__", "__qualname__"}

    assert names == set(vars(async_class)) - {"service", "__module__", "__doc__", "__qualname__"}
    for name in names:
        sync_method, async_method = getattr(blocking, name), getattr(awaited, name)
        assert inspect.signature(sync_method) == inspect.signature(async_method), name
        assert inspect.iscoroutinefunction(async_method), name
        assert sync_method.__doc__ and sync_method.__doc__ == async_method.__doc__, name
