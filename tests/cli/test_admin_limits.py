"""``gridweave admin user-limits``: a user's quotas and share weight, shown and set through
the real platform (its gateway gets the weights)."""

from __future__ import annotations

import pytest

from tests.cli.helpers import Invoke, as_user, json_of
from tests.platform_service.factories import PlatformServer

pytestmark = [pytest.mark.postgres, pytest.mark.kubeapi]


@pytest.fixture
def as_admin(monkeypatch: pytest.MonkeyPatch, admin_platform: PlatformServer) -> PlatformServer:
    """The commands run as ``admin_platform``'s admin."""
    as_user(monkeypatch, admin_platform, admin_platform.admin)
    return admin_platform


def _fits(output: str) -> None:
    assert output.strip()
    assert all(len(line) <= 80 for line in output.splitlines()), output


class TestUserLimits:
    def test_shown_set_kept_and_cleared(
        self, gridweave: Invoke, as_admin: PlatformServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("COLUMNS", "80")
        user = as_admin.new_user().user_id
        shown = gridweave("admin", "user-limits", user)
        assert shown.exit_code == 0, shown.output
        assert "no limit" in shown.output and "1 (the default)" in shown.output
        _fits(shown.output)
        args = ("--max-gpus", "8", "--max-vram", "80GiB", "--weight", "2")
        set_ = gridweave("admin", "user-limits", user, *args)
        assert set_.exit_code == 0, set_.output
        assert "80 GiB" in set_.output and "8" in set_.output
        _fits(set_.output)
        kept = json_of(gridweave("admin", "user-limits", user, "--max-gpus", "none", "--json"))
        assert kept == {
            "user_id": user,
            "max_gpus": None,
            "max_vram_mb": 81920,
            "share_weight": 2.0,
            "share_weight_is_default": False,
        }
        cleared = json_of(gridweave("admin", "user-limits", user, "--clear", "--json"))
        assert (cleared["max_vram_mb"], cleared["share_weight_is_default"]) == (None, True)

    @pytest.mark.parametrize(
        ("option", "value", "named"),
        [("--max-vram", "lots", "--max-vram"), ("--weight", "heavy", "--weight")],
    )
    def test_a_bad_value_is_named(
        self, gridweave: Invoke, as_admin: PlatformServer, option: str, value: str, named: str
    ) -> None:
        user = as_admin.new_user().user_id
        result = gridweave("admin", "user-limits", user, option, value)
        assert result.exit_code != 0
        assert named in result.output

    def test_a_weight_out_of_bounds_is_refused_naming_it(
        self, gridweave: Invoke, as_admin: PlatformServer
    ) -> None:
        user = as_admin.new_user().user_id
        result = gridweave("admin", "user-limits", user, "--weight", "0")
        assert result.exit_code != 0
        assert "share_weight" in result.output

    def test_a_user_is_refused(
        self, gridweave: Invoke, admin_platform: PlatformServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        user = admin_platform.new_user()
        as_user(monkeypatch, admin_platform, user)
        result = gridweave("admin", "user-limits", user.user_id, "--max-gpus", "100")
        assert result.exit_code != 0
        assert "this route is for admins" in result.output
