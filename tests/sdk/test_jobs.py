"""The SDK against the whole platform stack over real HTTP: the platform, credit, metering
and the faucet on PostgreSQL, the gateway on the real apiserver.

The gateway does not execute jobs here; ``tests.sdk.worker`` runs each job's real function
in this process and writes its outcome into the object store and the job record where the
gateway's worker does, so submission, polling, results, remote errors, logs, cancel and the
refusals are the platform's own answers.
"""

from __future__ import annotations

import pytest

import gridweave as gw
from gridweave_clients.platform import PlatformClient
from gridweave_controller import JobPhase
from gridweave_runtime.storage import LocalObjectStore
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User
from tests.sdk.worker import run_job, running_worker
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

FUNDS = 10**9


@gw.function(vram="8GiB", vendor="amd", timeout="1m")
def power(base: int, exponent: int = 2) -> int:
    return int(base**exponent)


@gw.function(vram="8GiB", vendor="amd", timeout="1m")
def check_positive(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative: {x}")
    return x


class Unusual(Exception):
    """An exception type the SDK cannot rebuild (not built in)."""


@gw.function(vram="8GiB", vendor="amd", timeout="1m")
def raise_unusual() -> None:
    raise Unusual("not built in")


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    """A funded user, configured as the SDK's user."""
    user = platform.new_user()
    credit.fund(user.user_id, FUNDS)
    gw.configure(url=platform.url, api_key=user.key)
    return user


class TestSpawn:
    def test_status_result_and_logs(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        handle = power.spawn(3, exponent=3)
        status = handle.status()
        assert status.phase is JobPhase.PENDING and status.vram_mb == 8192
        assert (status.vendor, status.timeout_seconds, status.max_retries) == ("amd", 60, 0)
        with pytest.raises(gw.JobNotFinished) as early:
            handle.result(timeout=0.2)
        assert early.value.job_id == handle.job_id and early.value.phase == "Pending"

        run_job(gateway, LocalObjectStore(gateway.storage_dir), handle.job_id)
        assert handle.result(timeout=30) == 27
        assert handle.status().phase is JobPhase.COMPLETED
        assert handle.logs().stdout == f"ran {handle.job_id}\n"

    def test_cancel(self, platform: PlatformServer, credit: CreditServer, alice: User) -> None:
        handle = power.spawn(2)
        assert credit.account(alice.user_id)["held"] > 0
        assert handle.cancel().phase is JobPhase.CANCELLED
        assert handle.cancel().phase is JobPhase.CANCELLED  # again: answered as it is
        assert credit.account(alice.user_id)["held"] == 0
        with pytest.raises(gw.JobDidNotComplete) as cancelled:
            handle.result(timeout=10)
        assert cancelled.value.phase == "Cancelled"

    def test_each_submission_is_one_job(self, platform: PlatformServer, alice: User) -> None:
        first, second = power.spawn(1), power.spawn(1)
        assert first.job_id != second.job_id  # a fresh idempotency key per call
        with PlatformClient(platform.url, alice.key) as client:
            listed = {job.job_id for job in client.list_jobs(JobPhase.PENDING).jobs}
        assert {first.job_id, second.job_id} <= listed
        first.cancel()
        second.cancel()


class TestRemote:
    def test_value_and_the_remote_exception(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        with running_worker(gateway, platform.url, alice.key):
            assert power.remote(7) == 49
            with pytest.raises(ValueError, match="negative: -1") as raised:
                check_positive.remote(-1)
            remote_traceback: str = raised.value.remote_traceback  # type: ignore[attr-defined]
            assert "in check_positive" in remote_traceback
            assert remote_traceback.endswith("ValueError: negative: -1\n")
            assert any("Remote traceback" in note for note in raised.value.__notes__)

            with pytest.raises(gw.RemoteError) as unusual:
                raise_unusual.remote()
            assert unusual.value.exception_type is not None
            assert unusual.value.exception_type.endswith("Unusual")
            assert "not built in" in unusual.value.remote_traceback


class TestRefusals:
    def test_no_credits_is_402_with_the_figures(self, platform: PlatformServer) -> None:
        poor = platform.new_user()
        gw.configure(url=platform.url, api_key=poor.key)
        with pytest.raises(gw.InsufficientCredits) as short:
            power.spawn(2)
        figures = (short.value.balance, short.value.held, short.value.available)
        assert figures == (0, 0, 0)
        assert short.value.needed == 90 * 60  # AMD up to 16 GiB: 90 per GPU-second, 60 s
        assert "needed 5400" in str(short.value)

    def test_past_a_quota_is_quota_exceeded_with_the_figures(
        self, platform: PlatformServer, alice: User
    ) -> None:
        limits = platform.http.put(
            f"/v1/admin/users/{alice.user_id}/limits",
            json={"max_vram_mb": 4096},
            headers=platform.admin.headers,
        )
        assert limits.status_code == 200, limits.text
        with pytest.raises(gw.QuotaExceeded) as refused:
            power.spawn(2)  # 8 GiB on one GPU
        figures = (refused.value.limit, refused.value.in_use, refused.value.asked)
        assert (refused.value.quota, figures) == ("max_vram_mb", (4096, 0, 8192))
        assert "max_vram_mb" in str(refused.value)

    def test_no_gpu_big_enough_names_the_largest(
        self, platform: PlatformServer, alice: User
    ) -> None:
        @gw.function(vram="200GB", vendor="nvidia")
        def huge() -> None:
            return None

        with pytest.raises(gw.NoGpuLargeEnough) as too_big:
            huge.remote()
        assert too_big.value.field == "vram_mb"
        assert too_big.value.largest_vram_mb == 81920
        assert "A100 80GB" in str(too_big.value)

        @gw.function(vram="8GB", gpu_model="H100")
        def on_a_model_nobody_has() -> None:
            return None

        with pytest.raises(gw.NoGpuLargeEnough) as unknown:
            on_a_model_nobody_has.remote()
        assert unknown.value.field == "gpu_models"
        assert "A100" in str(unknown.value)  # the models there are
