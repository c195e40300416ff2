"""The one retry policy, on both drivers, against a real server and injected faults."""

from __future__ import annotations

import uuid

import httpx
import pytest

from gridweave_clients import ClientClosed, Conflict, ServiceUnavailable
from tests.gridweave_clients.conftest import Probe
from tests.gridweave_clients.drivers import DRIVERS, CountingTransport, request
from tests.support.http_server import free_port

pytestmark = pytest.mark.parametrize("driver", DRIVERS)
OK = httpx.Response(200, json={"ok": True})


def _key() -> str:
    return uuid.uuid4().hex[:12]


class TestNothingSent:
    def test_a_write_without_a_key_is_retried_after_a_connect_error(self, driver: str) -> None:
        transport = CountingTransport(httpx.ConnectError("refused"), OK)

        answer = request(driver, "http://probe", "POST", "/v1/things", transport=transport)

        assert answer == {"ok": True}
        assert len(transport.requests) == 2

    def test_a_connect_timeout_is_retried_too(self, driver: str) -> None:
        transport = CountingTransport(httpx.ConnectTimeout("slow"), httpx.PoolTimeout("full"), OK)

        answer = request(driver, "http://probe", "POST", "/v1/things", transport=transport)

        assert answer == {"ok": True}
        assert len(transport.requests) == 3

    def test_an_unreachable_service_is_unavailable_after_every_attempt(self, driver: str) -> None:
        dead = f"http://127.0.0.1:{free_port()}"

        with pytest.raises(ServiceUnavailable, match="ConnectError") as raised:
            request(driver, dead, "POST", "/v1/things", json={"a": 1})

        assert raised.value.status_code is None
        assert raised.value.operation == "POST /v1/things"


class TestLostAnswers:
    def test_a_write_without_a_key_is_not_retried_after_a_timeout(
        self, driver: str, probe: Probe
    ) -> None:
        key = _key()

        with pytest.raises(ServiceUnavailable, match="ReadTimeout"):
            request(driver, probe.url, "POST", f"/v1/slow/{key}", timeout=0.3)

        assert probe.counts[key] == 1

    def test_a_write_with_an_idempotency_key_is_retried_after_a_timeout(
        self, driver: str, probe: Probe
    ) -> None:
        key = _key()

        answer = request(driver, probe.url, "POST", f"/v1/slow/{key}", timeout=0.3, idempotent=True)

        assert answer == {"attempt": 2}
        assert probe.counts[key] == 2

    def test_a_read_is_retried_after_a_timeout(self, driver: str, probe: Probe) -> None:
        key = _key()

        answer = request(driver, probe.url, "GET", f"/v1/slow/{key}", timeout=0.3)

        assert answer == {"attempt": 2}

    def test_a_dropped_connection_is_retried_for_a_read(self, driver: str) -> None:
        transport = CountingTransport(httpx.RemoteProtocolError("server disconnected"), OK)

        answer = request(driver, "http://probe", "GET", "/v1/things", transport=transport)

        assert answer == {"ok": True}
        assert len(transport.requests) == 2

    def test_a_dropped_connection_is_final_for_a_write_without_a_key(self, driver: str) -> None:
        transport = CountingTransport(httpx.ReadError("connection reset"), OK)

        with pytest.raises(ServiceUnavailable, match="ReadError"):
            request(driver, "http://probe", "POST", "/v1/things", transport=transport)

        assert len(transport.requests) == 1


class TestErrorAnswers:
    def test_a_503_is_retried_for_a_read(self, driver: str, probe: Probe) -> None:
        key = _key()

        answer = request(driver, probe.url, "GET", f"/v1/flaky/{key}")

        assert answer == {"attempt": 2}

    def test_a_503_is_final_for_a_write_without_a_key(self, driver: str, probe: Probe) -> None:
        key = _key()

        with pytest.raises(ServiceUnavailable) as raised:
            request(driver, probe.url, "POST", f"/v1/flaky/{key}")

        assert raised.value.status_code == 503
        assert probe.counts[key] == 1

    def test_a_503_is_retried_for_a_write_with_a_key(self, driver: str, probe: Probe) -> None:
        key = _key()

        answer = request(driver, probe.url, "POST", f"/v1/flaky/{key}", idempotent=True)

        assert answer == {"attempt": 2}

    def test_a_5xx_every_time_is_unavailable_after_every_attempt(
        self, driver: str, probe: Probe
    ) -> None:
        key = _key()

        with pytest.raises(ServiceUnavailable) as raised:
            request(driver, probe.url, "GET", f"/v1/flaky/{key}", params={"times": "10"})

        assert raised.value.status_code == 503
        assert probe.counts[key] == 3

    def test_a_4xx_is_never_retried(self, driver: str, probe: Probe) -> None:
        key = _key()

        with pytest.raises(Conflict):
            request(driver, probe.url, "GET", f"/v1/flaky/{key}", params={"status": "409"})

        assert probe.counts[key] == 1


class TestClosedClient:
    def test_a_closed_client_refuses_and_sends_nothing(self, driver: str, probe: Probe) -> None:
        key = _key()

        with pytest.raises(ClientClosed, match="closed"):
            request(driver, probe.url, "GET", f"/v1/slow/{key}", close_first=True)

        assert probe.counts[key] == 0
