"""``gridweave admin registry-quota`` against the real platform."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gridweave_cli.app import app
from gridweave_cli.exit_codes import ExitCode
from tests.platform_service.factories import PlatformServer, User

pytestmark = pytest.mark.postgres

AsUser = Callable[[User], None]


@pytest.fixture
def as_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, platform: PlatformServer) -> AsUser:
    """Run the commands as a user (its key in the environment)."""

    def configure(user: User) -> None:
        monkeypatch.setenv("GRIDWEAVE_CONFIG", str(tmp_path / "config.toml"))
        monkeypatch.setenv("GRIDWEAVE_URL", platform.url)
        monkeypatch.setenv("GRIDWEAVE_API_KEY", user.key)

    return configure


def gridweave(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_an_admin_sets_and_shows_a_quota(platform: PlatformServer, as_user: AsUser) -> None:
    user = platform.new_user()
    as_user(platform.admin)
    code, out, _ = gridweave("admin", "registry-quota", user.user_id, "50GB", "--json")
    assert code == 0
    assert json.loads(out)["quota_bytes"] == 50 * 10**9
    code, out, _ = gridweave("admin", "registry-quota", user.user_id)
    assert code == 0
    assert "50.00 GB" in out and "(the default)" not in out


def test_a_bad_size_is_a_usage_error(platform: PlatformServer, as_user: AsUser) -> None:
    as_user(platform.admin)
    code, _, err = gridweave("admin", "registry-quota", "usr-0000000000000000", "50 parsecs")
    assert code == ExitCode.USAGE
    assert "unknown unit" in err


def test_a_user_is_refused(platform: PlatformServer, as_user: AsUser) -> None:
    user = platform.new_user()
    as_user(user)
    code, _, err = gridweave("admin", "registry-quota", user.user_id, "1TB")
    assert code != 0
    assert "admins" in err


def test_a_user_shares_lists_and_unshares_a_repository(
    platform: PlatformServer, as_user: AsUser
) -> None:
    alice, bob = platform.new_user(), platform.new_user()
    repository = f"{alice.user_id}/model"
    as_user(alice)
    code, out, _ = gridweave("registry", "share", repository, bob.user_id)
    assert code == 0 and f"{bob.user_id} may pull {repository}" in out
    code, out, _ = gridweave("registry", "shares", "--json")
    assert code == 0 and json.loads(out)["granted"][0]["user_id"] == bob.user_id
    as_user(bob)
    code, out, _ = gridweave("registry", "shares")
    assert code == 0 and repository in out and "(received)" in out
    code, _, err = gridweave("registry", "unshare", repository, bob.user_id)
    assert code == ExitCode.INVALID_REQUEST and "namespace" in err
    as_user(alice)
    code, out, _ = gridweave("registry", "unshare", repository, bob.user_id)
    assert code == 0 and "no longer" in out
    code, _, err = gridweave("registry", "unshare", repository, bob.user_id)
    assert code == ExitCode.NOT_FOUND


def test_a_user_sees_its_usage(platform: PlatformServer, as_user: AsUser) -> None:
    as_user(platform.new_user())
    code, out, _ = gridweave("registry", "usage", "--json")
    assert code == 0
    body = json.loads(out)
    assert body["usage_bytes"] == 0 and body["quota_is_default"] is True


@pytest.mark.parametrize(
    "command",
    [
        ("admin", "registry-quota"),
        ("registry", "usage"),
        ("registry", "share"),
        ("registry", "unshare"),
        ("registry", "shares"),
    ],
)
def test_each_command_has_help_with_examples_and_json(command: tuple[str, str]) -> None:
    code, out, _ = gridweave(*command, "--help")
    assert code == 0
    assert "Examples:" in out and f"gridweave {' '.join(command)}" in out and "--json" in out
