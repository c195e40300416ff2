"""``gridweave login``, ``signup`` and ``credits`` against the platform, the faucet and
credit_service, and the exit codes of a missing, refused or unreachable platform."""

from __future__ import annotations

import io
import json
import stat
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer.testing
from typer.testing import Result

import gridweave as gw
from gridweave_cli.exit_codes import ExitCode
from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE, PriceTable
from tests.cli.helpers import Invoke, as_user, json_of
from tests.faucet_service.factories import GRANT, latest_code, wrong_code
from tests.platform_service.factories import PlatformServer
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]


def _new_email() -> str:
    return f"cli-{uuid.uuid4().hex[:8]}@example.com"


class TestLogin:
    def test_writes_a_private_file_the_sdk_then_uses(
        self, platform: PlatformServer, gridweave: Invoke, clean_configuration: Path
    ) -> None:
        user = platform.new_user()
        result = gridweave("login", "--url", platform.url + "/", "--api-key", user.key)
        assert result.exit_code == 0, result.output
        assert user.user_id in result.stdout and str(clean_configuration) in result.stdout

        assert stat.S_IMODE(clean_configuration.stat().st_mode) == 0o600
        assert stat.S_IMODE(clean_configuration.parent.stat().st_mode) == 0o700
        assert gw.current_config() == gw.Config(url=platform.url, api_key=user.key)
        # and the CLI's other commands read it too
        assert json_of(gridweave("credits", "--json"))["user_id"] == user.user_id

    def test_prompts_for_what_is_not_given(
        self, platform: PlatformServer, gridweave: Invoke, clean_configuration: Path
    ) -> None:
        user = platform.new_user()
        result = gridweave("login", "--json", input=f"{platform.url}\n{user.key}\n")
        body = _typed_then_json(result)
        assert body["user"]["user_id"] == user.user_id
        assert body["config_path"] == str(clean_configuration)
        assert user.key not in result.stderr  # typed hidden

    def test_a_refused_key_is_exit_6_and_writes_nothing(
        self, platform: PlatformServer, gridweave: Invoke, clean_configuration: Path
    ) -> None:
        result = gridweave("login", "--url", platform.url, "--api-key", "gw_live_nope_nope")
        assert result.exit_code == ExitCode.NOT_LOGGED_IN, result.output
        assert result.stderr.startswith("error: the platform refused the API key")
        assert result.stdout == ""
        assert not clean_configuration.exists()

    def test_a_bad_url_is_a_usage_error(self, gridweave: Invoke) -> None:
        result = gridweave("login", "--url", "ftp://x", "--api-key", "k")
        assert result.exit_code == ExitCode.USAGE
        assert "--url" in result.stderr


class TestSignup:
    def test_code_from_the_outbox_then_key_and_grant(
        self,
        platform: PlatformServer,
        faucet: httpx.Client,
        credit: CreditServer,
        gridweave: Invoke,
        clean_configuration: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        email = _new_email()
        _accept_lazy_input(monkeypatch)
        # The code is read from the outbox only when the command asks for it: by then the
        # command has had it sent. The first code typed is wrong and asked again.
        typed = _LazyInput(
            lambda: f"{wrong_code(latest_code(faucet, email))}\n{latest_code(faucet, email)}\n"
        )
        result = gridweave("signup", "--url", platform.url, "--email", email, "--json", input=typed)
        body = _typed_then_json(result)
        assert body["grant"] == GRANT and body["api_key"].startswith("gw_live_")
        assert "try again" in result.stderr
        assert credit.account(body["user"]["user_id"])["balance"] == GRANT
        assert gw.current_config().api_key == body["api_key"]
        assert stat.S_IMODE(clean_configuration.stat().st_mode) == 0o600

    def test_in_two_steps_with_the_code_given(
        self, platform: PlatformServer, faucet: httpx.Client, gridweave: Invoke
    ) -> None:
        email = _new_email()
        platform.http.post("/v1/signups", json={"email": email}).raise_for_status()
        code = latest_code(faucet, email)
        result = gridweave("signup", "--url", platform.url, "--email", email, "--code", code)
        assert result.exit_code == 0, result.output
        assert "Your API key (shown once): gw_live_" in result.stdout
        # the same code never issues a second key: a refusal, one line, exit 1
        again = gridweave("signup", "--url", platform.url, "--email", email, "--code", code)
        assert again.exit_code == ExitCode.FAILED
        assert again.stderr.startswith("error: ") and len(again.stderr.splitlines()) == 1

    def test_a_bad_email_is_named(self, platform: PlatformServer, gridweave: Invoke) -> None:
        result = gridweave("signup", "--url", platform.url, "--email", "nobody")
        assert result.exit_code == ExitCode.INVALID_REQUEST, result.output
        assert "email" in result.stderr


class TestCredits:
    def test_balance_held_available(
        self,
        platform: PlatformServer,
        credit: CreditServer,
        gridweave: Invoke,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        user = platform.new_user()
        credit.fund(user.user_id, 2_500_000)
        as_user(monkeypatch, platform, user)
        body = json_of(gridweave("credits", "--json"))
        assert (body["balance"], body["held"], body["available"]) == (2_500_000, 0, 2_500_000)
        table = gridweave("credits")
        assert table.exit_code == 0
        month = f"{datetime.now(UTC):%Y-%m}-01"
        assert [line.split() for line in table.stdout.splitlines()] == [
            ["balance", "2.500000"],
            ["held", "0.000000"],
            ["available", "2.500000"],
            ["spent", "since", month, "0.000000"],
            ["monthly", "cap", "none"],
            ["per-job", "cap", "none"],
        ]


class TestPrices:
    def test_metering_table_per_gpu_second_and_hour(
        self, platform: PlatformServer, gridweave: Invoke, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        as_user(monkeypatch, platform, platform.new_user())
        assert PriceTable.model_validate(json_of(gridweave("prices", "--json"))) == (
            DEFAULT_PRICE_TABLE
        )
        table = gridweave("prices")
        assert table.exit_code == 0, table.output
        lines = [line.split() for line in table.stdout.splitlines()]
        # 60 micro-credits a GPU-second up to 8 GiB: 0.216 credits a GPU-hour
        assert ["nvidia", "up", "to", "8", "GiB", "0.000060", "0.216000"] in lines
        assert ["nvidia", "over", "80", "GiB", "0.000780", "2.808000"] in lines
        assert ["amd", "up", "to", "16", "GiB", "0.000090", "0.324000"] in lines
        rows = sum(len(tiers) for tiers in DEFAULT_PRICE_TABLE.root.values())
        assert len(lines) == 1 + rows  # the header, a row per tier

    def test_no_key_is_refused(self, platform: PlatformServer) -> None:
        assert platform.http.get("/v1/prices").status_code == 401


class TestExitCodes:
    def test_not_logged_in_is_6(self, gridweave: Invoke, clean_configuration: Path) -> None:
        result = gridweave("credits")
        assert result.exit_code == ExitCode.NOT_LOGGED_IN
        assert "gridweave login" in result.stderr and str(clean_configuration) in result.stderr
        assert result.stdout == ""

    def test_a_revoked_key_is_6(
        self, platform: PlatformServer, gridweave: Invoke, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        user = platform.new_user()
        key_id = user.key.removeprefix("gw_live_").split("_")[0]
        revoked = platform.http.delete(f"/v1/keys/{key_id}", headers=user.headers)
        assert revoked.status_code == 200, revoked.text
        as_user(monkeypatch, platform, user)
        result = gridweave("jobs", "--json")
        assert result.exit_code == ExitCode.NOT_LOGGED_IN
        assert result.stdout == "" and "Traceback" not in result.output

    def test_unreachable_is_7(self, gridweave: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("GRIDWEAVE_URL", "http://127.0.0.1:9")  # discard: nothing listens
        monkeypatch.setenv("GRIDWEAVE_API_KEY", "gw_live_x_y")
        for command in (["credits"], ["nodes", "--json"], ["logs", "job-0"]):
            result = gridweave(*command)
            assert result.exit_code == ExitCode.UNREACHABLE, (command, result.output)
            assert result.stderr.startswith("error: the platform could not be reached")


def _typed_then_json(result: Result) -> Any:
    """The JSON after what was typed: ``CliRunner`` echoes visible input to stdout, where a
    terminal would show it on the tty (the prompts themselves go to stderr)."""
    assert result.exit_code == 0, (result.exit_code, result.output)
    return json.loads(result.stdout[result.stdout.index("{") :])


def _accept_lazy_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let ``CliRunner`` take a ``_LazyInput`` as stdin (it takes only text or bytes)."""
    original = typer.testing.make_input_stream

    def make_input_stream(input: Any, charset: str) -> Any:
        if isinstance(input, _LazyInput):
            return io.BufferedReader(input)
        return original(input, charset)

    monkeypatch.setattr(typer.testing, "make_input_stream", make_input_stream)


class _LazyInput(io.RawIOBase):
    """stdin whose text is made when first read (after the command has sent the code)."""

    def __init__(self, make: Callable[[], str]) -> None:
        self._make = make
        self._data: bytes | None = None
        self._position = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        if self._data is None:
            self._data = self._make().encode()
        chunk = self._data[self._position : self._position + len(buffer)]
        buffer[: len(chunk)] = chunk
        self._position += len(chunk)
        return len(chunk)
