"""The figures of the calls an endpoint took (``GET /v1/endpoints/{name}/-/stats``).

Over real HTTP: the real platform proxying to a real HTTP server that stands for the
endpoint's Serve route (its URL set on the real GridweaveEndpoint, as the gateway sets it
when Serve runs the replicas), the real gateway waking it on the real apiserver.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gridweave_controller.phases import EndpointPhase
from platform_service.services.endpoint_stats import LATENCY_WINDOW, EndpointStats, percentile
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User
from tests.platform_service.test_endpoints import FUNDS, deploy_body
from tests.support.credit_server import CreditServer


class TestPercentile:
    @pytest.mark.parametrize(
        ("fraction", "expected"), [(0.5, 50.0), (0.9, 90.0), (0.99, 99.0), (1.0, 100.0)]
    )
    def test_nearest_rank_of_one_to_a_hundred(self, fraction: float, expected: float) -> None:
        assert percentile([float(v) for v in range(1, 101)], fraction) == expected

    def test_no_values_has_no_percentile(self) -> None:
        assert percentile([], 0.5) is None

    def test_one_value_is_every_percentile(self) -> None:
        assert percentile([7.0], 0.01) == percentile([7.0], 0.99) == 7.0


class TestEndpointStats:
    def test_an_endpoint_without_calls_reads_all_zero(self) -> None:
        figures = EndpointStats().snapshot(user_id="u-1", name="chat")
        assert (figures.requests, figures.cold_starts, figures.latency_p50_ms) == (0, 0, None)

    def test_statuses_are_counted_by_class_and_owner(self) -> None:
        stats = EndpointStats()
        for status in (200, 201, 302, 404, 500, 503, None):
            stats.record_call(user_id="u-1", name="chat", status=status, latency_seconds=0.01)
        stats.record_call(user_id="u-2", name="chat", status=200, latency_seconds=0.01)
        figures = stats.snapshot(user_id="u-1", name="chat")
        assert (figures.requests, figures.ok, figures.client_errors) == (7, 3, 1)
        assert (figures.server_errors, figures.unreachable) == (2, 1)
        assert stats.snapshot(user_id="u-2", name="chat").requests == 1

    def test_latency_percentiles_cover_the_latest_window_only(self) -> None:
        stats = EndpointStats()
        for _ in range(LATENCY_WINDOW):
            stats.record_call(user_id="u", name="e", status=200, latency_seconds=10.0)
        for _ in range(LATENCY_WINDOW):
            stats.record_call(user_id="u", name="e", status=200, latency_seconds=0.002)
        figures = stats.snapshot(user_id="u", name="e")
        assert figures.requests == 2 * LATENCY_WINDOW
        assert figures.latency_samples == LATENCY_WINDOW
        assert figures.latency_p99_ms == pytest.approx(2.0)

    def test_cold_starts_keep_the_last_wakes_duration(self) -> None:
        stats = EndpointStats()
        stats.record_cold_start(user_id="u", name="e", wake_seconds=3.0)
        stats.record_cold_start(user_id="u", name="e", wake_seconds=1.5)
        figures = stats.snapshot(user_id="u", name="e")
        assert (figures.cold_starts, figures.last_cold_start_ms) == (2, 1500.0)


class _Replica(BaseHTTPRequestHandler):
    """The endpoint's server: ``/ok`` answers 200 after 20 ms, ``/boom`` 500."""

    def do_GET(self) -> None:
        if self.path.endswith("/ok"):
            time.sleep(0.02)
            status, body = 200, b'{"ok": true}'
        else:
            status, body = 500, b'{"error": "boom"}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def replica() -> Iterator[str]:
    """A real HTTP server standing for an endpoint's Serve route: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Replica)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/gw/served"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _wait_for_phase(gateway: GatewayServer, endpoint_id: str, phase: EndpointPhase) -> None:
    deadline = time.monotonic() + 20
    while gateway.crd.get_endpoint(endpoint_id).phase is not phase:
        assert time.monotonic() < deadline, f"{endpoint_id} never reached {phase}"
        time.sleep(0.05)


@pytest.mark.kubeapi
@pytest.mark.postgres
class TestStatsRoute:
    @pytest.fixture
    def alice(self, platform: PlatformServer, credit: CreditServer) -> User:
        user = platform.new_user()
        credit.fund(user.user_id, FUNDS)
        return user

    def _deploy_running(
        self, platform: PlatformServer, gateway: GatewayServer, user: User, name: str, url: str
    ) -> str:
        response = platform.http.post(
            "/v1/endpoints", json=deploy_body(name=name), headers=user.headers
        )
        assert response.status_code == 201, response.text
        endpoint_id: str = response.json()["endpoint_id"]
        _wait_for_phase(gateway, endpoint_id, EndpointPhase.DEPLOYING)
        gateway.crd.set_endpoint_running(endpoint_id, url)
        return endpoint_id

    def test_calls_are_counted_by_status_with_their_latency(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, replica: str
    ) -> None:
        self._deploy_running(platform, gateway, alice, "counted", replica)
        before = platform.http.get("/v1/endpoints/counted/-/stats", headers=alice.headers)
        assert before.status_code == 200, before.text
        assert (before.json()["requests"], before.json()["latency_p50_ms"]) == (0, None)
        for path in ("ok", "ok", "boom"):
            call = platform.http.get(f"/v1/endpoints/counted/{path}", headers=alice.headers)
            assert call.status_code == (200 if path == "ok" else 500), call.text
        figures = platform.http.get("/v1/endpoints/counted/-/stats", headers=alice.headers).json()
        assert (figures["requests"], figures["ok"], figures["server_errors"]) == (3, 2, 1)
        assert figures["latency_samples"] == 3
        # two of three calls slept 20 ms at the replica: the median includes that sleep
        assert figures["latency_p50_ms"] >= 20
        assert figures["latency_p99_ms"] >= figures["latency_p90_ms"] >= figures["latency_p50_ms"]
        assert figures["cold_starts"] == 0
        assert figures["last_request_at"] is not None

    def test_a_call_that_wakes_the_endpoint_is_a_cold_start(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, replica: str
    ) -> None:
        endpoint_id = self._deploy_running(platform, gateway, alice, "sleepy", replica)
        gateway.crd.set_endpoint_stopped(endpoint_id, "Idle", "scaled to zero")
        # this gateway runs no Serve (nothing brings a woken endpoint up while the call
        # waits): the wake is asked for and placed, and the call answered 503
        call = platform.http.get("/v1/endpoints/sleepy/ok", headers=alice.headers)
        assert call.status_code == 503, call.text
        assert call.json()["error"]["code"] == "endpoint_starting"
        woken = platform.http.get("/v1/endpoints/sleepy/-/stats", headers=alice.headers).json()
        assert (woken["cold_starts"], woken["requests"]) == (1, 0)
        assert woken["last_cold_start_ms"] > 0
        _wait_for_phase(gateway, endpoint_id, EndpointPhase.DEPLOYING)
        gateway.crd.set_endpoint_running(endpoint_id, replica)
        served = platform.http.get("/v1/endpoints/sleepy/ok", headers=alice.headers)
        assert served.status_code == 200, served.text
        figures = platform.http.get("/v1/endpoints/sleepy/-/stats", headers=alice.headers).json()
        assert (figures["requests"], figures["ok"], figures["cold_starts"]) == (1, 1, 1)

    def test_a_refused_call_is_not_counted(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, replica: str
    ) -> None:
        self._deploy_running(platform, gateway, alice, "closed", replica)
        assert platform.http.delete("/v1/endpoints/closed", headers=alice.headers).is_success
        call = platform.http.get("/v1/endpoints/closed/ok", headers=alice.headers)
        assert call.status_code == 409, call.text
        figures = platform.http.get("/v1/endpoints/closed/-/stats", headers=alice.headers).json()
        assert figures["requests"] == 0

    def test_another_users_endpoint_and_a_missing_one_are_404(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, replica: str
    ) -> None:
        self._deploy_running(platform, gateway, alice, "private", replica)
        bob = platform.new_user()
        for user, name in ((bob, "private"), (alice, "nonesuch")):
            response = platform.http.get(f"/v1/endpoints/{name}/-/stats", headers=user.headers)
            assert response.status_code == 404, response.text
            assert response.json()["error"]["resource"] == "endpoint"
        assert platform.http.get("/v1/endpoints/private/-/stats").status_code == 401
