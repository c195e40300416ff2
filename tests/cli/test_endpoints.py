"""``gridweave deploy``, ``endpoints`` and ``stop`` against the whole platform stack (the
gateway on the real apiserver placing endpoints, not serving them: that is
tests/sdk/test_endpoints_served.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gridweave_cli.exit_codes import ExitCode
from gridweave_controller import CrdClient, EndpointPhase
from tests.cli.helpers import Invoke, as_user, json_of
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

FUNDS = 10**9
SERVED_CLASS = """
class Echo:
    def echo(self, text: str) -> str:
        return text
"""


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer, monkeypatch: pytest.MonkeyPatch) -> User:
    user = platform.new_user()
    credit.fund(user.user_id, FUNDS)
    as_user(monkeypatch, platform, user)
    return user


class TestDeploy:
    def test_a_model_deployed_listed_and_stopped(
        self, alice: User, gridweave: Invoke, platform: PlatformServer
    ) -> None:
        deployed = json_of(
            gridweave("deploy", "chat", "--model-ref", "/models/tiny", "--vram", "2GiB", "--json")
        )
        assert deployed["name"] == "chat"
        assert deployed["mode"] == "transformers"
        assert deployed["vram_mb"] == 2048
        assert deployed["url"] == f"{platform.url}/v1/endpoints/chat"

        table = gridweave("endpoints")
        assert table.exit_code == 0, table.output
        assert "chat" in table.stdout and "transformers" in table.stdout
        listed = json_of(gridweave("endpoints", "--json"))["endpoints"]
        assert [item["name"] for item in listed] == ["chat"]

        stopped = json_of(gridweave("stop", "chat", "--json"))
        assert (stopped["phase"], stopped["reason"]) == ("Stopped", "Deleted")
        again = gridweave("stop", "chat")
        assert again.exit_code == 0 and "Stopped (Deleted)" in again.stdout

    def test_a_class_from_a_file(self, alice: User, gridweave: Invoke, tmp_path: Path) -> None:
        source = tmp_path / "served.py"
        source.write_text(SERVED_CLASS)
        deployed = json_of(
            gridweave("deploy", "echo", "--class", f"{source}:Echo", "--vram", "1GB", "--json")
        )
        assert deployed["mode"] == "custom"
        missing = gridweave("deploy", "echo2", "--class", f"{source}:Nope")
        assert missing.exit_code == ExitCode.USAGE

    def test_a_class_with_its_packages(
        self, alice: User, gridweave: Invoke, tmp_path: Path
    ) -> None:
        source = tmp_path / "served.py"
        source.write_text(SERVED_CLASS)
        deployed = json_of(
            gridweave(
                "deploy",
                "echo-pip",
                *("--class", f"{source}:Echo", "--vram", "1GB"),
                *("--pip", "numpy==2.1.3", "--pip", "six", "--json"),
            )
        )
        assert deployed["pip"] == ["numpy==2.1.3", "six"]
        for refused in (
            ("--class", f"{source}:Echo", "--pip", "--index-url=http://evil.example"),
            ("--model", "gpt2", "--pip", "six"),  # a model serves with the node's packages
        ):
            result = gridweave("deploy", "bad-pip", *refused)
            assert result.exit_code == ExitCode.USAGE, result.output
            assert "--pip" in result.output

    def test_a_decorated_class_brings_its_settings(
        self, alice: User, gridweave: Invoke, tmp_path: Path
    ) -> None:
        source = tmp_path / "decorated.py"
        source.write_text(
            "import gridweave as gw\n\n"
            '@gw.endpoint(vram="2GiB", max_replicas=2, idle="10m", memory="1GiB", '
            'pip=["six==1.16.0"], vendor="nvidia")\n' + SERVED_CLASS.lstrip()
        )
        deployed = json_of(
            gridweave("deploy", "echo-decorated", "--class", f"{source}:Echo", "--json")
        )
        settings = ("vram_mb", "max_replicas", "idle_seconds", "memory_mb", "pip", "vendor")
        assert {key: deployed[key] for key in settings} == {
            "vram_mb": 2048,
            "max_replicas": 2,
            "idle_seconds": 600,
            "memory_mb": 1024,
            "pip": ["six==1.16.0"],
            "vendor": "nvidia",
        }
        overridden = json_of(
            gridweave(
                "deploy",
                "echo-overridden",
                *("--class", f"{source}:Echo", "--vram", "1GiB", "--max-replicas", "1"),
                *("--pip", "requests", "--json"),
            )
        )
        assert (overridden["vram_mb"], overridden["max_replicas"]) == (1024, 1)
        assert (overridden["pip"], overridden["memory_mb"]) == (["requests"], 1024)

    def test_cpu_memory_and_gpu_models(
        self, alice: User, gridweave: Invoke, tmp_path: Path
    ) -> None:
        source = tmp_path / "served.py"
        source.write_text(SERVED_CLASS)
        deployed = json_of(
            gridweave(
                "deploy",
                "echo-sized",
                *("--class", f"{source}:Echo", "--vram", "1GB", "--memory", "2GB"),
                *("--cpu", "1.5", "--gpu-model", "A100", "--vendor", "nvidia", "--json"),
            )
        )
        assert (deployed["memory_mb"], deployed["cpu_millis"]) == (1908, 1500)
        assert deployed["gpu_models"] == ["A100"]
        for refused, named in (
            (("--memory", "lots"), "memory"),
            (("--cpu", "0"), "--cpu"),
            (("--gpu-model", "A100;rm"), "gpu_model"),
        ):
            result = gridweave("deploy", "bad-size", "--class", f"{source}:Echo", *refused)
            assert result.exit_code == ExitCode.USAGE, result.output
            assert named in result.output

    def test_refusals_have_their_exit_codes(
        self,
        alice: User,
        gridweave: Invoke,
        platform: PlatformServer,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        assert (
            gridweave("deploy", "x", "--mode", "onnx", "--model", "m").exit_code == ExitCode.USAGE
        )
        assert gridweave("deploy", "x").exit_code == ExitCode.USAGE  # no model
        assert gridweave("deploy", "Bad_Name", "--model", "m").exit_code == ExitCode.INVALID_REQUEST
        assert gridweave("stop", "nothing-here").exit_code == ExitCode.NOT_FOUND
        as_user(monkeypatch, platform, platform.new_user())  # no credits
        poor = gridweave("deploy", "x", "--model", "m")
        assert poor.exit_code == ExitCode.INSUFFICIENT_CREDITS, poor.output


class TestEndpointLogs:
    def test_its_replicas_output_or_why_there_is_none(
        self,
        alice: User,
        gridweave: Invoke,
        platform: PlatformServer,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        deployed = gridweave("deploy", "talky", "--model-ref", "/models/tiny", "--vram", "2GiB")
        assert deployed.exit_code == 0, deployed.output
        try:
            shown = gridweave("endpoint-logs", "talky")
            assert shown.exit_code == 0, shown.output
            # the test's gateway serves nothing: no replica, and the platform says why
            assert shown.stdout == "" and "talky: no replica output (" in shown.stderr
            read = json_of(gridweave("endpoint-logs", "talky", "--lines", "5", "--json"))
            assert (read["replicas"], read["lines"]) == ([], 5)
            assert gridweave("endpoint-logs", "talky", "-n", "0").exit_code == ExitCode.USAGE
            assert gridweave("endpoint-logs", "nothing-here").exit_code == ExitCode.NOT_FOUND
            as_user(monkeypatch, platform, platform.new_user())
            assert gridweave("endpoint-logs", "talky").exit_code == ExitCode.NOT_FOUND
        finally:
            as_user(monkeypatch, platform, alice)
            gridweave("stop", "talky")


def test_an_endpoint_stopped_for_credits_says_so(
    alice: User, gridweave: Invoke, gateway: GatewayServer
) -> None:
    deployed = json_of(gridweave("deploy", "broke", "--model", "m", "--json"))
    response = gateway.http.post(
        f"/v1/endpoints/{deployed['endpoint_id']}/stop",
        json={"reason": "OutOfCredits", "message": "the owner cannot pay the next period"},
        headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"},
    )
    assert response.status_code == 200, response.text
    table = gridweave("endpoints")
    assert "Stopped (OutOfCredits)" in table.stdout
    listed = json_of(gridweave("endpoints", "--json"))["endpoints"]
    assert (listed[0]["phase"], listed[0]["reason"]) == ("Stopped", "OutOfCredits")


@contextmanager
def moved_once_placed(
    gateway: GatewayServer, user: User, name: str, move: Callable[[CrdClient, str], object]
) -> Iterator[None]:
    """In a thread: once ``user``'s endpoint ``name`` is Deploying (placed; this gateway
    does not serve it), ``move(crd, endpoint_id)`` writes what its reconciler would."""

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for endpoint in gateway.crd.list_endpoints(user_id=user.user_id):
                placed = endpoint.phase is EndpointPhase.DEPLOYING
                if placed and endpoint.name.startswith(f"{name}-"):
                    move(gateway.crd, endpoint.name)
                    return
            time.sleep(0.1)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join(60)


class TestDeployWait:
    """``deploy --wait``: followed until it runs, fails, or the timeout passes."""

    def test_it_returns_once_the_endpoint_runs(
        self, alice: User, gridweave: Invoke, gateway: GatewayServer
    ) -> None:
        def run(crd: CrdClient, endpoint_id: str) -> object:
            return crd.set_endpoint_running(endpoint_id, "http://127.0.0.1:1/gw/x")

        with moved_once_placed(gateway, alice, "ready", run):
            result = gridweave("deploy", "ready", "--model", "m", "--wait", "--timeout", "60s")
        assert result.exit_code == 0, result.output
        assert "ready: Running at " in result.stdout

    def test_a_failure_exits_1_with_the_reason(
        self, alice: User, gridweave: Invoke, gateway: GatewayServer
    ) -> None:
        def fail(crd: CrdClient, endpoint_id: str) -> object:
            return crd.set_endpoint_failed(endpoint_id, "DeployFailed", "the model did not load")

        with moved_once_placed(gateway, alice, "broken", fail):
            result = gridweave("deploy", "broken", "--model", "m", "--wait", "--timeout", "60s")
        assert result.exit_code == ExitCode.FAILED, result.output
        assert (
            "broken did not start: Failed (DeployFailed): the model did not load" in result.stderr
        )

    def test_past_the_timeout_it_exits_1_and_leaves_it_deploying(
        self, alice: User, gridweave: Invoke
    ) -> None:
        result = gridweave("deploy", "slow", "--model", "m", "--wait", "--timeout", "2s")
        assert result.exit_code == ExitCode.FAILED, result.output
        listed = json_of(gridweave("endpoints", "--json"))["endpoints"]
        assert [item["name"] for item in listed] == ["slow"]
        assert listed[0]["phase"] in ("Pending", "Deploying")  # placed, never served here
        assert "slow is not running after 2 s: Pending" in result.stderr or (
            "slow is not running after 2 s: Deploying" in result.stderr
        )

    def test_a_bad_timeout_is_a_usage_error(self, alice: User, gridweave: Invoke) -> None:
        result = gridweave("deploy", "x", "--model", "m", "--wait", "--timeout", "soon")
        assert result.exit_code == ExitCode.USAGE, result.output
