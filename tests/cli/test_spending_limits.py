"""Spending limits from the command line and the SDK, on the whole platform stack:
``gridweave credits`` (the caps, the month's spending, the warning at 80%),
``gridweave credits limits``, ``gridweave admin spending-limits``, a job past a cap (exit 4,
``gw.SpendingLimitReached``) and ``gw.set_spending_limits`` / ``gw.spending_limits``."""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path

import pytest

import gridweave as gw
from gridweave_cli.exit_codes import ExitCode
from gridweave_clients import InvalidRequest
from tests.cli.helpers import Invoke, as_user, json_of
from tests.platform_service.factories import PlatformServer, User
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

FUNDS = 10**9
#: ``sample_functions.add``'s hold: AMD 8 GiB at 90 micro-credits a second x 60 s
ADD_HOLD = 90 * 60
ADD = f"{Path(__file__).with_name('sample_functions.py')}::add"


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer, monkeypatch: pytest.MonkeyPatch) -> User:
    """A funded user, the CLI's and the SDK's user."""
    user = platform.new_user()
    credit.fund(user.user_id, FUNDS)
    as_user(monkeypatch, platform, user)
    return user


def _rows(output: str) -> dict[str, str]:
    """The two-column table's rows: label -> value."""
    rows = {}
    for line in output.splitlines():
        *label, value = line.split()
        rows[" ".join(label)] = value
    return rows


class TestCredits:
    def test_the_caps_and_the_months_spending_then_a_warning_at_80_percent(
        self, alice: User, credit: CreditServer, gridweave: Invoke
    ) -> None:
        assert gridweave("credits", "limits", "--monthly", "1").exit_code == 0
        credit.place_hold(alice.user_id, 799_999, f"job-{uuid.uuid4().hex[:8]}")
        below = gridweave("credits")
        assert below.exit_code == 0, below.output
        rows = _rows(below.stdout)
        assert (rows["monthly cap"], rows["per-job cap"]) == ("1.000000", "none")
        assert [value for label, value in rows.items() if label.startswith("spent since")] == [
            "0.799999"
        ]
        assert "warning" not in below.stderr
        credit.place_hold(alice.user_id, 1, f"job-{uuid.uuid4().hex[:8]}")
        at = gridweave("credits")
        assert at.exit_code == 0, at.output
        assert at.stderr.startswith("warning: 80% of your monthly spending cap is used")
        assert "0.800000 of 1.000000 credits" in " ".join(at.stderr.split())
        body = json_of(gridweave("credits", "--json"))
        assert (body["held"], body["spending"]["spent"]) == (800_000, 800_000)
        assert body["spending"]["monthly_cap"] == 1_000_000


class TestLimits:
    def test_set_kept_and_cleared(self, alice: User, gridweave: Invoke) -> None:
        set_ = json_of(
            gridweave("credits", "limits", "--monthly", "50", "--per-job", "2.5", "--json")
        )
        assert (set_["monthly_cap"], set_["per_job_cap"]) == (50_000_000, 2_500_000)
        kept = json_of(gridweave("credits", "limits", "--per-job", "none", "--json"))
        assert (kept["monthly_cap"], kept["per_job_cap"]) == (50_000_000, None)
        shown = gridweave("credits", "limits")
        assert shown.exit_code == 0 and "50.000000" in shown.stdout
        cleared = json_of(gridweave("credits", "limits", "--clear", "--json"))
        assert (cleared["monthly_cap"], cleared["per_job_cap"]) == (None, None)

    @pytest.mark.parametrize("value", ["-1", "lots", "0.0000001"])
    def test_a_bad_cap_is_a_usage_error_naming_the_option(
        self, alice: User, gridweave: Invoke, value: str
    ) -> None:
        result = gridweave("credits", "limits", "--monthly", value)
        assert result.exit_code == ExitCode.USAGE, result.output
        assert "--monthly" in result.stderr

    def test_a_job_past_the_per_job_cap_is_exit_4_naming_it(
        self, alice: User, gridweave: Invoke
    ) -> None:
        gridweave("credits", "limits", "--per-job", "0.005")
        result = gridweave("run", ADD, "1")
        assert result.exit_code == ExitCode.INSUFFICIENT_CREDITS, result.output
        line = " ".join(result.stderr.split())
        assert line.startswith("error: spending limit: this job holds 5400 micro-credits")
        assert "per-job cap of 5000" in line
        assert result.stdout == ""


class TestAdminSpendingLimits:
    def test_an_admins_cap_wins_and_the_user_cannot_raise_it(
        self,
        platform: PlatformServer,
        alice: User,
        gridweave: Invoke,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        as_user(monkeypatch, platform, platform.admin)
        args = ("admin", "spending-limits", alice.user_id, "--monthly", "10", "--json")
        admin = json_of(gridweave(*args))
        assert (admin["admin_monthly_cap"], admin["monthly_cap"]) == (10_000_000, 10_000_000)
        as_user(monkeypatch, platform, alice)
        raised = gridweave("credits", "limits", "--monthly", "11")
        assert raised.exit_code == ExitCode.INVALID_REQUEST, raised.output
        assert "monthly_cap" in raised.stderr and "admin" in raised.stderr
        lower = json_of(gridweave("credits", "limits", "--monthly", "5", "--json"))
        assert (lower["monthly_cap"], lower["admin_monthly_cap"]) == (5_000_000, 10_000_000)


class TestSdk:
    def test_set_and_read_in_credits(self, alice: User) -> None:
        limits = gw.set_spending_limits(monthly=50, per_job="0.25")
        assert (limits.monthly, limits.per_job) == (Decimal(50), Decimal("0.25"))
        assert gw.spending_limits() == limits
        assert limits.spent == 0 and limits.month_start.day == 1
        with pytest.raises(gw.ConfigurationError, match="per_job"):
            gw.set_spending_limits(per_job=-1)
        with pytest.raises(gw.ConfigurationError, match="6 decimals"):
            gw.set_spending_limits(monthly=Decimal("0.0000001"))

    def test_a_submission_past_a_cap_raises_spending_limit_reached(self, alice: User) -> None:
        from tests.cli.sample_functions import add

        gw.set_spending_limits(monthly=Decimal(ADD_HOLD + ADD_HOLD // 2) / 1_000_000)
        add.spawn(1)
        with pytest.raises(gw.SpendingLimitReached) as raised:
            add.spawn(2)
        error = raised.value
        assert (error.cap, error.limit, error.spent, error.asked) == (
            "monthly",
            ADD_HOLD + ADD_HOLD // 2,
            ADD_HOLD,
            ADD_HOLD,
        )

    def test_above_an_admins_cap_is_refused_naming_the_field(
        self, platform: PlatformServer, alice: User
    ) -> None:
        response = platform.http.put(
            f"/v1/admin/users/{alice.user_id}/spending-limits",
            json={"per_job_cap": 1_000_000},
            headers=platform.admin.headers,
        )
        assert response.status_code == 200, response.text
        with pytest.raises(InvalidRequest) as raised:
            gw.set_spending_limits(per_job=2)
        assert raised.value.field == "per_job_cap"
