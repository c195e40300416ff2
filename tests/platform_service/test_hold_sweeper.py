"""Metering's hold sweeper on the real credit_service and gateway (real apiserver), jobs
submitted through the real platform: the hold of a job the gateway failed while Pending
comes back whole, to the micro-credit, although the gateway's own report of it cannot reach
metering (down for the gateway here), once the grace has passed (until then the sweeper
does not even read its job); so does, once the grace has passed, the hold of a
submission the gateway refused whose release failed (metering's release route down at that
moment); a Pending job's, and a job's that held a GPU (its usage report's to settle), stay.
The sweeper reads and releases with metering's own role, as it runs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from gridweave_clients.aiohttp_transport import AiohttpTransport
from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.gateway import AsyncGatewayClient
from metering_service.services.hold_sweeper import HoldSweeper
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway
from tests.platform_service.factories import (
    NOWHERE,
    PlatformServer,
    User,
    platform_settings,
    running_platform,
    submit_body,
)
from tests.support.asgi_proxy import forward, request_body, send_answer
from tests.support.credentials import service_auth
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer
from tests.support.http_server import serve_in_thread
from tests.support.kubeapi import KubeAPI

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

FUNDS = 10**9
GRACE_S = 600.0


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def gateway(kubeapi: KubeAPI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    """The real gateway, its usage reports unable to reach metering: the holds of jobs it
    ends are the sweeper's to close."""
    with running_gateway(
        kubeapi,
        tmp_path_factory.mktemp("gateway"),
        **service_auth(INTERNAL_TOKEN),
        metering_service_url=NOWHERE,
    ) as server:
        yield server


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    user = platform.new_user()
    credit.fund(user.user_id, FUNDS)
    return user


@pytest.fixture
def clock() -> Clock:
    return Clock()


class CountingTransport(httpx.AsyncBaseTransport):
    """The asyncio clients' transport, counting the calls it sends."""

    def __init__(self) -> None:
        self.calls = 0
        self._transport = AiohttpTransport(limits=httpx.Limits())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        return await self._transport.handle_async_request(request)

    async def aclose(self) -> None:
        await self._transport.aclose()


class Sweeps:
    """One sweeper on the real services, its passes run on one event loop of the test's."""

    def __init__(self, credit: CreditServer, gateway: GatewayServer, clock: Clock) -> None:
        self._runner = asyncio.Runner()
        self._credit = AsyncCreditClient(credit.url, INTERNAL_TOKEN, role="metering")
        #: the sweeper's reads of the gateway
        self.gateway_reads = CountingTransport()
        self._gateway = AsyncGatewayClient(
            gateway.url, INTERNAL_TOKEN, role="metering", transport=self.gateway_reads
        )
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
    def test_a_job_failed_while_pending_gets_its_whole_hold_back_after_the_grace(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        credit: CreditServer,
        alice: User,
        clock: Clock,
        sweep: Sweeps,
    ) -> None:
        job_id, held = submit(platform, alice)
        assert credit.account(alice.user_id)["held"] == held > 0
        gateway.crd.set_job_failed(job_id, "ImageRefused", "the image's share was withdrawn")
        assert job_id not in sweep()  # its own report has the grace to close it ...
        clock.now += GRACE_S - 1
        assert job_id not in sweep()
        assert sweep.gateway_reads.calls == 0  # ... and its job is not even read meanwhile
        assert credit.account(alice.user_id)["held"] == held
        clock.now += 1
        assert job_id in sweep()
        account = credit.account(alice.user_id)
        assert (account["balance"], account["held"]) == (FUNDS, 0)
        assert credit.ledger_amounts(alice.user_id) == [FUNDS]  # nothing charged
        assert job_id not in sweep()  # closed: once
        assert credit.account(alice.user_id)["balance"] == FUNDS

    def test_a_pending_job_keeps_its_hold(
        self,
        platform: PlatformServer,
        credit: CreditServer,
        alice: User,
        clock: Clock,
        sweep: Sweeps,
    ) -> None:
        job_id, held = submit(platform, alice)
        assert job_id not in sweep()
        clock.now += GRACE_S
        assert job_id not in sweep()  # Pending, read past the grace: it may still run
        assert sweep.gateway_reads.calls >= 1
        assert credit.account(alice.user_id)["held"] == held

    def test_a_job_that_held_a_gpu_is_left_to_metering(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        credit: CreditServer,
        alice: User,
        clock: Clock,
        sweep: Sweeps,
    ) -> None:
        job_id, held = submit(platform, alice)
        gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
        gateway.crd.set_job_running(job_id)
        assert job_id not in sweep()
        clock.now += GRACE_S
        assert job_id not in sweep()  # it holds a GPU: its usage report settles the hold
        assert credit.account(alice.user_id)["held"] == held

    def test_a_refused_submission_whose_release_failed_goes_back_after_the_grace(
        self,
        releases_down: PlatformServer,
        credit: CreditServer,
        alice: User,
        clock: Clock,
        sweep: Sweeps,
    ) -> None:
        """The gateway refuses the job (no GPU that large) and the platform's release fails:
        the user gets the refusal, the hold stays open until the sweeper's grace has passed."""
        body = submit_body(vendor="nvidia", vram_mb=200_000)
        refused = releases_down.http.post("/v1/jobs", json=body, headers=alice.headers)
        assert refused.status_code == 422, refused.text
        held = credit.account(alice.user_id)["held"]
        assert held > 0  # the release did not reach credit_service
        assert sweep() == []  # maybe in flight
        clock.now += GRACE_S - 1
        assert sweep() == []
        assert credit.account(alice.user_id)["held"] == held
        clock.now += 1
        assert len(sweep()) == 1
        account = credit.account(alice.user_id)
        assert (account["balance"], account["held"]) == (FUNDS, 0)
        assert credit.ledger_amounts(alice.user_id) == [FUNDS]  # nothing charged
        assert sweep() == []  # closed: once


class ReleasesDown:
    """metering_service behind a proxy whose ``POST /v1/releases`` answers 503: the platform's
    release of a refused submission fails while every other call goes through."""

    def __init__(self, target: str) -> None:
        self.target = target

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await request_body(receive)
        if scope["path"] == "/v1/releases":
            await send_answer(send, 503, b'{"error":{"code":"down","message":"down"}}')
            return
        answer = await forward(self.target, scope, body)
        await send_answer(send, answer.status_code, answer.content, answer.headers)


@pytest.fixture(scope="module")
def releases_down(
    platform_database: str,
    credit: CreditServer,
    metering: httpx.Client,
    gateway: GatewayServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PlatformServer]:
    """A platform of its own whose calls to metering pass :class:`ReleasesDown`."""
    with serve_in_thread(ReleasesDown(str(metering.base_url).rstrip("/"))) as proxy_url:
        settings = platform_settings(
            platform_database,
            tmp_path_factory.mktemp("releases-down"),
            credit_service_url=credit.url,
            metering_service_url=proxy_url,
            gateway_url=gateway.url,
            storage_dir=gateway.storage_dir,
        )
        with running_platform(settings) as server:
            yield server
