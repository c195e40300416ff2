"""100 concurrent deducts, holds, captures, settlements, releases and transfers, with
duplicates sent side by side, retries after lost answers and injected mid-operation
failures: no negative balance, no double charge, ledger sum == balance everywhere."""

from __future__ import annotations

import asyncio
import random
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from credit_service.services import ledger
from credit_service.services.holds import settlement_key
from credit_service.settings import CreditSettings
from tests.credit_service.conftest import AUTH, assert_ledger_consistent, mint, read_ledger_state

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

USERS = [f"user-{index}" for index in range(5)]
MINTED = 15_000
PRE_HOLDS = 30


@dataclass
class Operation:
    """One logical call: sent once or several times with the same idempotency key."""

    key: str
    kind: str
    path: str
    body: dict[str, Any]
    answers: list[httpx.Response] = field(default_factory=list)


class FailOnce:
    """Makes the first attempt of chosen keys die after a posting is flushed."""

    def __init__(self, keys: set[str]) -> None:
        self.pending = set(keys)
        self.fired: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, posting: ledger.Posting, operation_key: str) -> None:
        with self.lock:
            if operation_key not in self.pending:
                return
            self.pending.discard(operation_key)
            self.fired.add(operation_key)
        raise RuntimeError(f"injected failure in {operation_key}")


async def send(client: httpx.AsyncClient, operation: Operation) -> None:
    """Send one attempt; an injected 500 is retried with the same key, as a client would."""
    for _ in range(5):
        response = await client.post(operation.path, json=operation.body, headers=AUTH)
        operation.answers.append(response)
        if response.status_code != 500:
            return
    raise AssertionError(f"{operation.key} kept failing")


def build_operations(rng: random.Random, hold_ids: list[tuple[int, str, int]]) -> list[Operation]:
    """The 100 logical operations, over accounts that cannot cover all of them."""
    operations: list[Operation] = []
    for index in range(30):
        user = rng.choice(USERS)
        key = f"deduct-{index}"
        body = {"amount": rng.randint(100, 3_000), "idempotency_key": key}
        operations.append(Operation(key, "deduct", f"/v1/accounts/{user}/deduct", body))
    for index in range(20):
        key = f"hold-{index}"
        body = {
            "user_id": rng.choice(USERS),
            "amount": rng.randint(500, 4_000),
            "idempotency_key": key,
            "reference": f"new-job-{index}",
        }
        operations.append(Operation(key, "hold", "/v1/holds", body))
    for index in range(10):
        source, target = rng.sample(USERS, 2)
        key = f"transfer-{index}"
        body = {
            "from_user_id": source,
            "to_user_id": target,
            "amount": rng.randint(100, 2_000),
            "idempotency_key": key,
        }
        operations.append(Operation(key, "transfer", "/v1/transfers", body))
    # 30 pre-placed holds: 15 captured, 5 settled by reference, 10 raced capture vs release
    for index, (hold_id, reference, amount) in enumerate(hold_ids):
        if index < 15:
            key = f"capture-{index}"
            body = {"amount": rng.randint(0, amount), "idempotency_key": key}
            operations.append(Operation(key, "capture", f"/v1/holds/{hold_id}/capture", body))
        elif index < 20:
            owner = USERS[index % len(USERS)]  # who the pre-placed hold belongs to
            body = {"reference": reference, "user_id": owner, "amount": rng.randint(1, amount)}
            operations.append(
                Operation(settlement_key(reference), "capture", "/v1/settlements", body)
            )
        else:
            key = f"race-capture-{index}"
            body = {"amount": rng.randint(1, amount), "idempotency_key": key}
            operations.append(Operation(key, "capture", f"/v1/holds/{hold_id}/capture", body))
            key = f"race-release-{index}"
            operations.append(
                Operation(key, "release", f"/v1/holds/{hold_id}/release", {"idempotency_key": key})
            )
    return operations


class TestConcurrentMoneyMovement:
    @pytest.mark.parametrize("seed", [20261202, 7])
    async def test_no_negative_balance_no_double_charge_no_drift(
        self,
        client: httpx.AsyncClient,
        credit_settings: CreditSettings,
        monkeypatch: pytest.MonkeyPatch,
        seed: int,
    ) -> None:
        rng = random.Random(seed)
        for user in USERS:
            await mint(client, user, MINTED, f"mint-{user}")
        hold_ids: list[tuple[int, str, int]] = []
        for index in range(PRE_HOLDS):
            reference = f"job-{index}"
            response = await client.post(
                "/v1/holds",
                json={
                    "user_id": USERS[index % len(USERS)],
                    "amount": 600,
                    "idempotency_key": f"pre-{index}",
                    "reference": reference,
                },
                headers=AUTH,
            )
            assert response.status_code == 200
            hold_ids.append((response.json()["hold_id"], reference, 600))

        operations = build_operations(rng, hold_ids)
        assert len(operations) == 100
        injector = FailOnce({op.key for op in rng.sample(operations, 15)})
        monkeypatch.setattr(ledger, "_after_posting", injector)

        attempts = []
        for operation in operations:
            attempts.append(send(client, operation))
            if rng.random() < 0.4:  # a duplicate sent side by side with the original
                attempts.append(send(client, operation))
        rng.shuffle(attempts)
        await asyncio.gather(*attempts)
        # retries after a lost answer: a third of the operations are sent again afterwards
        await asyncio.gather(*(send(client, op) for op in rng.sample(operations, 33)))

        assert injector.fired, "the injected failures must have happened"
        expected = {user: MINTED for user in USERS}
        expected_entries: dict[str, int] = {}
        hold_outcomes: dict[str, set[str]] = defaultdict(set)
        for operation in operations:
            finals = [answer for answer in operation.answers if answer.status_code != 500]
            statuses = {answer.status_code for answer in finals}
            assert statuses <= {200, 402, 409}, (operation.key, statuses)
            successes = [answer.json() for answer in finals if answer.status_code == 200]
            if not successes:
                continue
            first = successes[0]
            assert all(body == first for body in successes), f"{operation.key}: answers differ"
            # a 402 is not recorded against the key (it moved nothing), so an attempt refused
            # while money was short may be followed by one that succeeds once holds close
            if operation.kind == "deduct":
                expected[first["account"]["user_id"]] -= operation.body["amount"]
                expected_entries[operation.key] = 1
            elif operation.kind == "transfer":
                expected[operation.body["from_user_id"]] -= operation.body["amount"]
                expected[operation.body["to_user_id"]] += operation.body["amount"]
                expected_entries[operation.key] = 2
            elif operation.kind == "capture":
                expected[first["user_id"]] -= first["captured"]
                if first["captured"]:
                    expected_entries[operation.key] = 1
                hold_outcomes[str(first["hold_id"])].add(operation.key)
            elif operation.kind == "release":
                hold_outcomes[str(first["hold_id"])].add(operation.key)

        state = read_ledger_state(str(credit_settings.database_url))
        assert_ledger_consistent(state)
        assert state.balances == expected  # no double charge, nothing lost
        charged_keys = {
            key: count
            for key, count in state.entries_by_key.items()
            if not key.startswith(("mint-",))
        }
        assert charged_keys == expected_entries
        assert all(len(keys) == 1 for keys in hold_outcomes.values()), "a hold closed twice"
        refused = [op for op in operations if all(a.status_code != 200 for a in op.answers)]
        assert any(a.status_code == 402 for op in refused for a in op.answers), (
            "demand exceeded supply"
        )
        for operation in refused:
            for answer in operation.answers:
                if answer.status_code == 402:
                    assert answer.json()["error"]["needed"] > answer.json()["error"]["available"]
