"""``/v1/admin/users``: admins list users and grant credits through the real credit_service,
one mint per ``Idempotency-Key``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.platform_service.factories import PlatformServer, platform_settings, running_platform
from tests.support.credit_server import AUTH_HEADERS, CreditServer

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def platform(
    platform_database: str, credit: CreditServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PlatformServer]:
    settings = platform_settings(
        platform_database, tmp_path_factory.mktemp("platform"), credit_service_url=credit.url
    )
    with running_platform(settings) as server:
        yield server


def _grant(
    platform: PlatformServer, user_id: str, amount: object, key: str | None = None
) -> httpx.Response:
    headers = {**platform.admin.headers, "Idempotency-Key": key or uuid.uuid4().hex}
    return platform.http.post(
        f"/v1/admin/users/{user_id}/credit-grants", json={"amount": amount}, headers=headers
    )


def _balance(platform: PlatformServer, headers: dict[str, str]) -> int:
    response = platform.http.get("/v1/credits", headers=headers)
    assert response.status_code == 200, response.text
    balance: int = response.json()["balance"]
    return balance


class TestListUsers:
    def test_pages_oldest_first_with_the_total(self, platform: PlatformServer) -> None:
        made = [platform.new_user().user_id for _ in range(3)]
        first = platform.http.get("/v1/admin/users?limit=2", headers=platform.admin.headers)
        assert first.status_code == 200, first.text
        total = first.json()["total"]
        assert total >= 4 and len(first.json()["users"]) == 2
        assert first.json()["users"][0]["user_id"] == platform.admin.user_id
        everyone = platform.http.get(
            f"/v1/admin/users?limit={total}", headers=platform.admin.headers
        ).json()["users"]
        assert [user["user_id"] for user in everyone][-3:] == made
        rest = platform.http.get(
            f"/v1/admin/users?limit=2&offset={total - 1}", headers=platform.admin.headers
        )
        assert [user["user_id"] for user in rest.json()["users"]] == made[-1:]

    @pytest.mark.parametrize(("query", "field"), [("limit=0", "limit"), ("offset=-1", "offset")])
    def test_bad_paging_is_named(self, platform: PlatformServer, query: str, field: str) -> None:
        response = platform.http.get(f"/v1/admin/users?{query}", headers=platform.admin.headers)
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == field

    def test_only_admins(self, platform: PlatformServer) -> None:
        user = platform.new_user()
        assert platform.http.get("/v1/admin/users", headers=user.headers).status_code == 403
        response = platform.http.post(
            f"/v1/admin/users/{user.user_id}/credit-grants",
            json={"amount": 5},
            headers={**user.headers, "Idempotency-Key": uuid.uuid4().hex},
        )
        assert response.status_code == 403
        assert _balance(platform, user.headers) == 0


class TestGrantCredits:
    def test_a_grant_moves_the_money_once_per_key(self, platform: PlatformServer) -> None:
        user = platform.new_user()
        key = uuid.uuid4().hex
        first = _grant(platform, user.user_id, 2_500_000, key)
        assert first.status_code == 201, first.text
        assert first.json() == {
            "user_id": user.user_id,
            "amount": 2_500_000,
            "idempotency_key": key,
            "balance": 2_500_000,
            "available": 2_500_000,
        }
        with ThreadPoolExecutor(4) as pool:  # a double (or quadruple) click
            again = list(
                pool.map(lambda _: _grant(platform, user.user_id, 2_500_000, key), range(4))
            )
        assert all(response.status_code == 201 for response in again), [r.text for r in again]
        assert _balance(platform, user.headers) == 2_500_000
        assert (
            _grant(platform, user.user_id, 1_000_000).status_code == 201
        )  # a new key: a new grant
        assert _balance(platform, user.headers) == 3_500_000

    def test_the_same_key_for_another_amount_is_refused(self, platform: PlatformServer) -> None:
        user = platform.new_user()
        key = uuid.uuid4().hex
        assert _grant(platform, user.user_id, 1_000, key).status_code == 201
        refused = _grant(platform, user.user_id, 2_000, key)
        assert refused.status_code == 409, refused.text
        assert _balance(platform, user.headers) == 1_000

    @pytest.mark.parametrize(
        ("amount", "field"), [(0, "amount"), (-5, "amount"), ("10", "amount"), (1.5, "amount")]
    )
    def test_bad_amounts_are_named(
        self, platform: PlatformServer, amount: object, field: str
    ) -> None:
        user = platform.new_user()
        response = _grant(platform, user.user_id, amount)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["fields"][0]["field"] == field
        assert _balance(platform, user.headers) == 0

    @pytest.mark.parametrize("key", [None, "short", "has space in it", "x" * 65])
    def test_the_idempotency_key_is_required_and_checked(
        self, platform: PlatformServer, key: str | None
    ) -> None:
        user = platform.new_user()
        headers = dict(platform.admin.headers)
        if key is not None:
            headers["Idempotency-Key"] = key
        response = platform.http.post(
            f"/v1/admin/users/{user.user_id}/credit-grants", json={"amount": 5}, headers=headers
        )
        assert response.status_code == 422, response.text
        assert response.json()["error"]["fields"][0]["field"] == "Idempotency-Key"

    def test_an_unknown_user_is_404_and_nothing_is_minted(
        self, platform: PlatformServer, credit: CreditServer
    ) -> None:
        response = _grant(platform, "usr-0000000000000000", 5)
        assert response.status_code == 404, response.text
        account = httpx.get(
            f"{credit.url}/v1/accounts/usr-0000000000000000",
            headers=AUTH_HEADERS,
        )
        assert account.status_code == 404


class TestCreditLedger:
    def test_each_grant_is_an_entry_of_the_users_own_ledger_newest_first(
        self, platform: PlatformServer
    ) -> None:
        user, other = platform.new_user(), platform.new_user()
        empty = platform.http.get("/v1/credits/ledger", headers=user.headers)
        assert empty.status_code == 200, empty.text  # no account before the first credit
        assert empty.json() == {"user_id": user.user_id, "entries": [], "next_before_id": None}
        for amount in (1_000, 2_000, 3_000):
            assert _grant(platform, user.user_id, amount).status_code == 201
        assert _grant(platform, other.user_id, 7_000).status_code == 201
        first = platform.http.get("/v1/credits/ledger?limit=2", headers=user.headers).json()
        assert [(e["amount"], e["balance_after"]) for e in first["entries"]] == [
            (3_000, 6_000),
            (2_000, 3_000),
        ]
        assert {entry["kind"] for entry in first["entries"]} == {"mint"}
        rest = platform.http.get(
            f"/v1/credits/ledger?limit=2&before_id={first['next_before_id']}",
            headers=user.headers,
        ).json()
        assert [(e["amount"], e["balance_after"]) for e in rest["entries"]] == [(1_000, 1_000)]
        assert rest["next_before_id"] is None
        theirs = platform.http.get("/v1/credits/ledger", headers=other.headers).json()
        assert [e["amount"] for e in theirs["entries"]] == [7_000]

    @pytest.mark.parametrize(
        ("query", "field"),
        [("limit=0", "limit"), ("limit=1001", "limit"), ("before_id=x", "before_id")],
    )
    def test_bad_paging_is_named(self, platform: PlatformServer, query: str, field: str) -> None:
        user = platform.new_user()
        response = platform.http.get(f"/v1/credits/ledger?{query}", headers=user.headers)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["fields"][0]["field"] == field
