"""An endpoint that waits for GPUs, as the SDK and the CLI show it: the platform stack of the
platform tests, its gateway placing endpoints (not serving them) on two A100 80GB."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

import gridweave as gw
from gridweave_cli.app import app
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.endpoint_factories import Greeter
from tests.platform_service.factories import PlatformServer, User
from tests.sdk.serving_factories import sdk_user
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

WHY = (
    "waiting for 1 real nvidia GPU(s) with 1024 MiB free on one node: no GPU, real or "
    "simulated, has room now"
)


@pytest.fixture
def user(platform: PlatformServer, credit: CreditServer) -> Iterator[User]:
    with sdk_user(platform, credit, 10**9) as funded:
        yield funded


class TestWaitingEndpoint:
    def test_its_reason_and_message_reach_the_sdk_and_the_cli(
        self, user: User, platform: PlatformServer, gateway: GatewayServer
    ) -> None:
        both = gw.endpoint(vram="80GiB", gpus=2, vendor="nvidia")(Greeter).deploy("both-gpus")
        waiting = gw.endpoint(vram="1GiB", vendor="nvidia")(Greeter).deploy("waits")
        try:
            status = waiting.status()
            assert status.phase == "Pending", status  # both A100s are held
            # what the scheduling loop writes for a vllm endpoint whose real GPUs are full
            gateway.crd.set_endpoint_waiting(status.endpoint_id, "RealGpuBusy", WHY)
            seen = waiting.status()
            assert (seen.phase, seen.reason, seen.message) == ("Pending", "RealGpuBusy", WHY)
            with pytest.raises(gw.EndpointNotRunning) as timed_out:
                waiting.wait_until_running(timeout=0.2)
            assert timed_out.value.reason == "RealGpuBusy"
            assert "Pending (RealGpuBusy)" in str(timed_out.value)
            assert WHY in str(timed_out.value)
            listed = CliRunner().invoke(
                app,
                ["endpoints"],
                env={
                    "GRIDWEAVE_URL": platform.url,
                    "GRIDWEAVE_API_KEY": user.key,
                    "COLUMNS": "200",  # the table unwrapped
                },
            )
            assert listed.exit_code == 0, listed.output
            assert "Pending (RealGpuBusy)" in listed.stdout
        finally:
            waiting.stop()
            both.stop()
