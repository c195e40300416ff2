"""What the dashboard's /v1 proxy sends on: the raw path, the body as it arrives, and the
browser's address, believed by the real platform (and so by the faucet's per-address
limits) only with the dashboard's proxy secret."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse

from gridweave_allinone.dashboard import DashboardSettings, create_dashboard_app
from gridweave_allinone.dashboard.__main__ import server_options
from tests.faucet_service.factories import faucet_settings, running_faucet
from tests.platform_service.factories import PlatformServer, platform_settings, running_platform
from tests.support.credit_server import CreditServer
from tests.support.http_server import free_port, serve_in_thread
from tests.support.postgres import PostgresTestServer

SECRET = "dashboard-proxy-secret-for-tests"


class Recorder:
    """A stand-in platform on a real port: answers what it received, and marks when the
    first bytes of a body arrived (before the rest was sent)."""

    def __init__(self) -> None:
        self.first_chunk = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        request = Request(scope, receive)
        body = b""
        async for chunk in request.stream():
            if chunk:
                self.first_chunk.set()
            body += chunk
        answer = JSONResponse(
            {
                "raw_path": scope["raw_path"].decode(),
                "query": scope["query_string"].decode(),
                "body": body.decode(),
                "forwarded_for": request.headers.getlist("x-forwarded-for"),
                "proxy": request.headers.getlist("x-gridweave-proxy"),
            }
        )
        await answer(scope, receive, send)


@pytest.fixture(scope="module")
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(scope="module")
def recorded(recorder: Recorder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The dashboard (with a proxy secret) in front of the recorder."""
    with serve_in_thread(recorder) as upstream:
        settings = DashboardSettings(
            platform_url=upstream,
            dist_dir=tmp_path_factory.mktemp("none"),
            proxy_secret=SECRET,
        )
        with serve_dashboard(settings) as url:
            yield url


@contextmanager
def serve_dashboard(settings: DashboardSettings) -> Iterator[str]:
    """The dashboard served as ``python -m gridweave_allinone.dashboard`` serves it (its
    uvicorn options), on a free port of loopback."""
    options = server_options(settings) | {"port": free_port(), "lifespan": "on"}
    server = uvicorn.Server(uvicorn.Config(**options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the dashboard did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{options['port']}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


class TestForwarded:
    def test_the_raw_path_travels_with_its_percent_encoding(self, recorded: str) -> None:
        path = "/v1/endpoints/my%2Fmodel/v1/chat%20x%25y/%2e%2e"
        answer = httpx.get(f"{recorded}{path}?a=%2F&b=1", timeout=10).json()
        assert answer["raw_path"] == path
        assert answer["query"] == "a=%2F&b=1"

    def test_the_body_is_streamed_as_it_arrives(self, recorded: str, recorder: Recorder) -> None:
        recorder.first_chunk.clear()
        reached: list[bool] = []

        def body() -> Iterator[bytes]:
            yield b"first part, "
            # a proxy holding the whole body never sends this part on before the rest
            reached.append(recorder.first_chunk.wait(timeout=5))
            yield b"the rest"

        answer = httpx.post(f"{recorded}/v1/upload", content=body(), timeout=30)
        assert answer.json()["body"] == "first part, the rest"
        assert reached == [True], "the proxy buffered the body before sending it on"

    def test_the_browsers_address_replaces_any_it_sent_and_the_secret_is_the_proxys(
        self, recorded: str
    ) -> None:
        """A local process naming an address is not believed: without
        WEB_FORWARDED_ALLOW_IPS the dashboard forwards the connection's own."""
        answer = httpx.get(
            f"{recorded}/v1/me",
            headers={"X-Gridweave-Proxy": "made-up", "X-Forwarded-For": "198.51.100.7, 10.0.0.1"},
            timeout=10,
        ).json()
        assert answer["forwarded_for"] == ["127.0.0.1"]
        assert answer["proxy"] == [SECRET]
        plain = httpx.get(f"{recorded}/v1/me", timeout=10).json()
        assert plain["forwarded_for"] == ["127.0.0.1"]

    def test_a_tls_terminator_named_in_the_settings_is_believed(
        self, recorder: Recorder, tmp_path: Path
    ) -> None:
        with serve_in_thread(recorder) as upstream:
            settings = DashboardSettings(
                platform_url=upstream,
                dist_dir=tmp_path,
                proxy_secret=SECRET,
                forwarded_allow_ips="127.0.0.1",
            )
            with serve_dashboard(settings) as url:
                answer = httpx.get(
                    f"{url}/v1/me",
                    headers={"X-Forwarded-For": "198.51.100.7, 10.0.0.1"},
                    timeout=10,
                ).json()
        # the terminator's list: the last address is the one it saw
        assert answer["forwarded_for"] == ["10.0.0.1"]

    def test_a_platform_under_a_path_gets_it_before_the_raw_path(
        self, recorder: Recorder, tmp_path: Path
    ) -> None:
        with serve_in_thread(recorder) as upstream:
            settings = DashboardSettings(platform_url=f"{upstream}/platform", dist_dir=tmp_path)
            with serve_in_thread(create_dashboard_app(settings)) as url:
                answer = httpx.get(f"{url}/v1/jobs/a%2Fb", timeout=10).json()
        assert answer["raw_path"] == "/platform/v1/jobs/a%2Fb"

    def test_without_a_secret_none_is_sent(self, recorder: Recorder, tmp_path: Path) -> None:
        with serve_in_thread(recorder) as upstream:
            settings = DashboardSettings(platform_url=upstream, dist_dir=tmp_path)
            with serve_in_thread(create_dashboard_app(settings)) as url:
                answer = httpx.get(
                    f"{url}/v1/me", headers={"X-Gridweave-Proxy": SECRET}, timeout=10
                ).json()
        assert answer["proxy"] == []


@pytest.fixture(scope="module")
def faucet(
    postgres: PostgresTestServer, credit: CreditServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    """A faucet allowing two requests per client address."""
    url = postgres.create_database("gwfaucet")
    settings = faucet_settings(
        url, credit.url, state_dir=tmp_path_factory.mktemp("faucet"), requests_per_address=2
    )
    try:
        with running_faucet(settings) as client:
            yield client
    finally:
        postgres.drop_database(url)


@pytest.fixture(scope="module")
def platform(
    platform_database: str,
    credit: CreditServer,
    faucet: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PlatformServer]:
    """The platform knowing the dashboard's proxy secret."""
    settings = platform_settings(
        platform_database,
        tmp_path_factory.mktemp("platform"),
        credit_service_url=credit.url,
        faucet_service_url=str(faucet.base_url),
        dashboard_proxy_secret=SECRET,
    )
    with running_platform(settings) as server:
        yield server


@pytest.fixture(scope="module")
def dashboard(platform: PlatformServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The dashboard behind a TLS terminator on loopback (the test's requests stand for
    its: their X-Forwarded-For is the browser's)."""
    settings = DashboardSettings(
        platform_url=platform.url,
        dist_dir=tmp_path_factory.mktemp("dist"),
        proxy_secret=SECRET,
        forwarded_allow_ips="127.0.0.1",
    )
    with serve_dashboard(settings) as url:
        yield url


def _sign_up(base: str, **headers: str) -> int:
    email = f"u-{uuid.uuid4().hex[:10]}@example.com"
    return httpx.post(f"{base}/v1/signups", json={"email": email}, headers=headers).status_code


@pytest.mark.postgres
class TestPerAddressLimits:
    def test_the_faucet_counts_the_browsers_address_through_the_dashboard(
        self, dashboard: str
    ) -> None:
        first = {"X-Forwarded-For": "203.0.113.10"}
        assert [_sign_up(dashboard, **first) for _ in range(3)] == [202, 202, 429]
        # another browser behind the same dashboard has its own count
        assert _sign_up(dashboard, **{"X-Forwarded-For": "203.0.113.11"}) == 202

    def test_an_address_named_without_the_secret_is_not_believed(
        self, platform: PlatformServer
    ) -> None:
        assert [_sign_up(platform.url) for _ in range(2)] == [202, 202]  # 127.0.0.1's two
        for proxy in ("wrong", None):
            headers = {"X-Forwarded-For": f"198.51.100.{uuid.uuid4().int % 250}"}
            if proxy is not None:
                headers["X-Gridweave-Proxy"] = proxy
            assert _sign_up(platform.url, **headers) == 429  # still counted as 127.0.0.1
        believed = {"X-Forwarded-For": "198.51.100.251", "X-Gridweave-Proxy": SECRET}
        assert _sign_up(platform.url, **believed) == 202
