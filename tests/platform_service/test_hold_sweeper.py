"""Metering's hold sweeper on the real credit_service and gateway (real apiserver), jobs
submitted through the real platform: the hold of a job the gateway failed while Pending
comes back whole, to the micro-credit; one whose job the gateway never created comes back
once the grace has passed; a Pending job's, and a job's that held a GPU (its usage report's
to settle), stay. The sweeper reads and releases with metering's own role, as it runs."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator

import pytest

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.gateway import AsyncGatewayClient
from metering_service.services.hold_sweeper import HoldSweeper
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User, submit_body
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

FUNDS = 10**9
GRACE_S = 600.0


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    user = platform.new_user()
    credit.fund(user.user_id, FUNDS)
    return user


@pytest.fixture
def clock() -> Clock:
    return Clock()


class Sweeps:
    """One sweeper on the real services, its passes run on one event loop of the test's."""

    def __init__(self, credit: CreditServer, gateway: GatewayServer, clock: Clock) -> None:
        self._runner = asyncio.Runner()
        self._credit = AsyncCreditClient(credit.url, INTERNAL_TOKEN, role="metering")
        self._gateway = AsyncGatewayClient(gateway.url, INTERNAL_TOKEN, role="metering")
        self.sweeper = HoldSweeper(self._credit, self._gateway, grace_seconds=GRACE_S, clock=clock)

    def __call__(self) -> list[str]:
        """One pass: the references it released."""
        return self._runner.run(self.sweeper.sweep())

    def close(self) -> None:
        self._runner.run(self._credit.aclose())
        self._runner.run(self._gateway.aclose())
        self._runner.close()


@pytest.fixture
def sweep(credit: CreditServer, gateway: GatewayServer, clock: Clock) -> Iterator[Sweeps]:
    sweeps = Sweeps(credit, gateway, clock)
    try:
        yield sweeps
    finally:
        sweeps.close()


def submit(platform: PlatformServer, user: User) -> tuple[str, int]:
    response = platform.http.post("/v1/jobs", json=submit_body(), headers=user.headers)
    assert response.status_code == 201, response.text
    return response.json()["job_id"], response.json()["hold_amount"]


class TestHoldSweeper:
    def test_a_job_failed_while_pending_gets_its_whole_hold_back(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        credit: CreditServer,
        alice: User,
        sweep: Sweeps,
    ) -> None:
        job_id, held = submit(platform, alice)
        assert credit.account(alice.user_id)["held"] == held > 0
        assert job_id not in sweep()  # Pending: it may run
        assert credit.account(alice.user_id)["held"] == held
        gateway.crd.set_job_failed(job_id, "ImageRefused", "the image's share was withdrawn")
        assert job_id in sweep()
        account = credit.account(alice.user_id)
        assert (account["balance"], account["held"]) == (FUNDS, 0)
        assert credit.ledger_amounts(alice.user_id) == [FUNDS]  # nothing charged
        assert job_id not in sweep()  # closed: once
        assert credit.account(alice.user_id)["balance"] == FUNDS

    def test_a_job_that_held_a_gpu_is_left_to_metering(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        credit: CreditServer,
        alice: User,
        sweep: Sweeps,
    ) -> None:
        job_id, held = submit(platform, alice)
        gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
        gateway.crd.set_job_running(job_id)
        assert job_id not in sweep()
        assert credit.account(alice.user_id)["held"] == held

    def test_a_hold_whose_job_was_never_created_goes_back_after_the_grace(
        self,
        gateway: GatewayServer,
        credit: CreditServer,
        alice: User,
        clock: Clock,
        sweep: Sweeps,
    ) -> None:
        """A refused submission whose release failed (credit_service was unreachable)."""
        reference = f"job-{secrets.token_hex(10)}"
        credit.place_hold(alice.user_id, 12_345, reference)
        assert reference not in sweep()  # maybe in flight
        clock.now += GRACE_S - 1
        assert reference not in sweep()
        assert credit.account(alice.user_id)["held"] == 12_345
        clock.now += 1
        assert reference in sweep()
        account = credit.account(alice.user_id)
        assert (account["balance"], account["held"]) == (FUNDS, 0)
