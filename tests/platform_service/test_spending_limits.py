"""Spending limits through the platform over real HTTP: the user's and an admin's caps,
kept and enforced by the real credit_service; a submission past one is 402
``spending_limit`` with the figures, and nothing is held or created."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from gridweave_clients.metering.endpoint_periods import endpoint_hold_amount
from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE
from tests.platform_service.factories import PlatformServer, User, submit_body
from tests.platform_service.test_endpoints import deploy_body
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

#: the hold of ``submit_body()``: metering's AMD 16 GiB price, 90, x 60 s x 1 GPU
DEFAULT_HOLD = 90 * 60
FUNDS = 10**9


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    """A funded user."""
    user = platform.new_user()
    credit.fund(user.user_id, FUNDS)
    return user


def _submit(platform: PlatformServer, user: User) -> httpx.Response:
    return platform.http.post("/v1/jobs", json=submit_body(), headers=user.headers)


def _own_caps(platform: PlatformServer, user: User, **caps: Any) -> httpx.Response:
    return platform.http.put("/v1/account/spending-limits", json=caps, headers=user.headers)


def _admin_caps(platform: PlatformServer, user_id: str, **caps: Any) -> httpx.Response:
    return platform.http.put(
        f"/v1/admin/users/{user_id}/spending-limits", json=caps, headers=platform.admin.headers
    )


def _stored_jobs(storage_dir: Path) -> set[str]:
    jobs = storage_dir / "jobs"
    return {path.name for path in jobs.iterdir()} if jobs.exists() else set()


def _refusal(response: httpx.Response) -> tuple[str, str, int, int, int]:
    assert response.status_code == 402, response.text
    error = response.json()["error"]
    return error["code"], error["cap"], error["limit"], error["spent"], error["asked"]


class TestSubmissionPastACap:
    def test_a_job_past_the_per_job_cap_is_402_and_nothing_is_held_or_created(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        assert _own_caps(platform, alice, per_job_cap=DEFAULT_HOLD - 1).status_code == 200
        before = _stored_jobs(platform.storage_dir)
        refused = _submit(platform, alice)
        assert _refusal(refused) == (
            "spending_limit",
            "per_job",
            DEFAULT_HOLD - 1,
            0,
            DEFAULT_HOLD,
        )
        assert "per-job cap" in refused.json()["error"]["message"]
        assert credit.account(alice.user_id)["held"] == 0
        assert platform.http.get("/v1/jobs", headers=alice.headers).json()["jobs"] == []
        assert _stored_jobs(platform.storage_dir) == before

    def test_jobs_until_the_monthly_cap_then_402_with_spent_and_asked(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        cap = 2 * DEFAULT_HOLD + DEFAULT_HOLD // 2
        assert _own_caps(platform, alice, monthly_cap=cap).status_code == 200
        assert _submit(platform, alice).status_code == 201
        assert _submit(platform, alice).status_code == 201
        assert _refusal(_submit(platform, alice)) == (
            "spending_limit",
            "monthly",
            cap,
            2 * DEFAULT_HOLD,
            DEFAULT_HOLD,
        )
        assert credit.account(alice.user_id)["held"] == 2 * DEFAULT_HOLD
        assert len(platform.http.get("/v1/jobs", headers=alice.headers).json()["jobs"]) == 2
        limits = platform.http.get("/v1/account/spending-limits", headers=alice.headers).json()
        assert (limits["monthly_cap"], limits["spent"]) == (cap, 2 * DEFAULT_HOLD)


class TestWhoSetsWhat:
    def test_the_admins_cap_wins_and_the_user_cannot_raise_it(
        self, platform: PlatformServer, alice: User
    ) -> None:
        assert _own_caps(platform, alice, monthly_cap=10 * DEFAULT_HOLD).status_code == 200
        admin = _admin_caps(platform, alice.user_id, monthly_cap=DEFAULT_HOLD)
        assert admin.status_code == 200, admin.text
        assert admin.json()["monthly_cap"] == DEFAULT_HOLD
        assert _submit(platform, alice).status_code == 201
        assert _refusal(_submit(platform, alice))[1:3] == ("monthly", DEFAULT_HOLD)
        raised = _own_caps(platform, alice, monthly_cap=DEFAULT_HOLD + 1)
        assert raised.status_code == 422
        assert raised.json()["error"]["fields"][0]["field"] == "monthly_cap"
        read = platform.http.get(
            f"/v1/admin/users/{alice.user_id}/spending-limits", headers=platform.admin.headers
        ).json()
        assert (read["user_monthly_cap"], read["admin_monthly_cap"]) == (
            10 * DEFAULT_HOLD,
            DEFAULT_HOLD,
        )

    def test_a_user_cannot_set_an_admins_cap(self, platform: PlatformServer, alice: User) -> None:
        response = platform.http.put(
            f"/v1/admin/users/{alice.user_id}/spending-limits",
            json={"monthly_cap": 10**12},
            headers=alice.headers,
        )
        assert response.status_code == 403

    def test_an_unknown_user_is_404(self, platform: PlatformServer) -> None:
        response = _admin_caps(platform, "no-such-user", monthly_cap=1)
        assert response.status_code == 404

    def test_caps_read_before_any_credit(self, platform: PlatformServer) -> None:
        user = platform.new_user()
        limits = platform.http.get("/v1/account/spending-limits", headers=user.headers)
        assert limits.status_code == 200, limits.text
        assert (limits.json()["monthly_cap"], limits.json()["spent"]) == (None, 0)

    @pytest.mark.parametrize(
        ("field", "value"), [("monthly_cap", -1), ("per_job_cap", 2.5), ("monthly_cap", "50")]
    )
    def test_a_bad_cap_is_422_naming_it(
        self, platform: PlatformServer, alice: User, field: str, value: Any
    ) -> None:
        response = _own_caps(platform, alice, **{field: value})
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"].endswith(field)


class TestDeployPastACap:
    """An endpoint whose holds would pass a cap is refused before anything is created: its
    billing would be refused those holds once it ran."""

    PERIOD_HOLD = endpoint_hold_amount(
        DEFAULT_PRICE_TABLE,
        vendor="nvidia",
        vram_mb=4096,
        gpu_count=1,
        max_replicas=1,
        period_seconds=60,
    )

    def _deploy(self, platform: PlatformServer, user: User, name: str) -> httpx.Response:
        return platform.http.post(
            "/v1/endpoints", json=deploy_body(name=name), headers=user.headers
        )

    def test_a_period_past_the_per_job_cap_is_402_and_nothing_is_created(
        self, platform: PlatformServer, alice: User
    ) -> None:
        assert _own_caps(platform, alice, per_job_cap=self.PERIOD_HOLD - 1).status_code == 200
        refused = self._deploy(platform, alice, "per-job")
        assert _refusal(refused) == (
            "spending_limit",
            "per_job",
            self.PERIOD_HOLD - 1,
            0,
            self.PERIOD_HOLD,
        )
        assert "each billing period of this endpoint" in refused.json()["error"]["message"]
        listed = platform.http.get("/v1/endpoints", headers=alice.headers)
        assert "per-job" not in listed.text

    def test_first_holds_past_the_monthly_cap_are_402_naming_them(
        self, platform: PlatformServer, alice: User
    ) -> None:
        first_holds = 2 * self.PERIOD_HOLD  # two billing periods at one replica
        assert _own_caps(platform, alice, monthly_cap=first_holds - 1).status_code == 200
        refused = self._deploy(platform, alice, "monthly")
        assert _refusal(refused) == ("spending_limit", "monthly", first_holds - 1, 0, first_holds)
        assert "monthly" not in platform.http.get("/v1/endpoints", headers=alice.headers).text

    def test_within_the_caps_it_is_created(self, platform: PlatformServer, alice: User) -> None:
        caps = {"monthly_cap": 2 * self.PERIOD_HOLD, "per_job_cap": self.PERIOD_HOLD}
        assert _own_caps(platform, alice, **caps).status_code == 200
        accepted = self._deploy(platform, alice, "within")
        assert accepted.status_code == 201, accepted.text
