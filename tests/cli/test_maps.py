"""``gridweave map`` and ``map-status`` end to end: the gateway executing on the session's
Ray, each worker's chunks in their containers, the values printed in the items' order."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gridweave_cli.exit_codes import ExitCode
from tests.cli.helpers import Invoke, as_user, json_of
from tests.job_gateway.execution_factories import RayWorld
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User
from tests.sdk.serving_factories import executing_gateway
from tests.support.credit_server import CreditServer
from tests.support.kubeapi import KubeAPI

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

FUNCTIONS = Path(__file__).with_name("sample_functions.py")


@pytest.fixture(scope="module")
def gateway(
    ray_world: RayWorld,
    kubeapi: KubeAPI,
    metering: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[GatewayServer]:
    """The gateway executing on the session's Ray (the platform fixture uses it)."""
    with executing_gateway(kubeapi, metering, tmp_path_factory.mktemp("gateway-maps")) as server:
        yield server


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer, monkeypatch: pytest.MonkeyPatch) -> User:
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    as_user(monkeypatch, platform, user)
    return user


class TestMap:
    def test_values_in_order_then_a_failed_item_exits_1_with_its_traceback(
        self, alice: User, gridweave: Invoke, tmp_path: Path
    ) -> None:
        shown = gridweave("map", f"{FUNCTIONS}::fail", "3", "1", "4", "--concurrency", "2")
        assert shown.exit_code == 0, shown.output
        assert shown.stdout == "3\n1\n4\n"
        items = tmp_path / "items.jsonl"
        items.write_text("5\n-2\n\n7\n")
        failed = gridweave("map", f"{FUNCTIONS}::fail", "--items-file", str(items), "--json")
        assert failed.exit_code == ExitCode.FAILED
        assert json.loads(failed.stdout) == [5, "ValueError: negative: -2", 7]
        assert "item 1: Traceback (most recent call last)" in failed.stderr
        assert "2 done, 1 failed of 3" in failed.stderr

    def test_detach_then_map_status(self, alice: User, gridweave: Invoke) -> None:
        options = ["--vram", "1GiB", "--vendor", "nvidia", "--detach", "--json"]
        detached = gridweave("map", f"{FUNCTIONS}::plain", "a", "b", *options)
        assert detached.exit_code == 0, detached.output
        map_id = json_of(detached)["map_id"]
        status = json_of(gridweave("map-status", map_id, "--json"))
        assert status["map_id"] == map_id and status["items"] == 2
        shown = gridweave("map-status", map_id)
        assert shown.exit_code == 0 and shown.stdout.startswith(map_id)
        assert f"{map_id}-w0" in shown.stdout

    def test_no_items_and_a_bad_items_file_are_named(
        self, alice: User, gridweave: Invoke, tmp_path: Path
    ) -> None:
        none = gridweave("map", f"{FUNCTIONS}::fail")
        assert none.exit_code == ExitCode.USAGE and "ITEMS" in none.output
        bad = tmp_path / "bad.jsonl"
        bad.write_text("1\n{oops\n")
        broken = gridweave("map", f"{FUNCTIONS}::fail", "--items-file", str(bad))
        assert broken.exit_code == ExitCode.USAGE and "bad.jsonl:2" in broken.output
