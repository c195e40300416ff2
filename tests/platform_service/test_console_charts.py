"""GET /v1/admin/console/charts: the real Prometheus scraping the real platform and gateway
(their public /metrics, no token), the platform's named queries answered as series."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from platform_service.errors import MetricsUnavailable
from platform_service.services.console import CHARTS, read_console_charts
from tests.job_gateway.gateway_factories import GatewayServer, new_job_id, running_gateway
from tests.platform_service.factories import (
    NOWHERE,
    PlatformServer,
    platform_settings,
    running_platform,
)
from tests.support.credentials import service_auth
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.http_server import free_port
from tests.support.kubeapi import KubeAPI
from tests.support.prometheus import running_prometheus, started_or_skip
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kubeapi

MIB = 2**20
#: One simulated GPU of 16 GiB: its VRAM in use and utilization come from what is held.
SIMULATED_INVENTORY = """
nodes:
  - name: sim-node
    gpus:
      - {index: 0, vendor: nvidia, model: Simulated GPU, vram_mb: 16384, simulated: true}
"""


@dataclass(frozen=True)
class Charted:
    platform: PlatformServer
    gateway: GatewayServer
    prometheus_url: str


@pytest.fixture(scope="module")
def charted(
    kubeapi: KubeAPI, platform_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Charted]:
    """Prometheus scraping the platform and the gateway every second; the platform knowing
    its URL (both ports chosen first: each names the other)."""
    workdir = tmp_path_factory.mktemp("console")
    for part in ("gateway", "prometheus", "platform"):
        (workdir / part).mkdir()
    platform_port, prometheus_port = free_port(), free_port()
    with running_gateway(
        kubeapi,
        workdir / "gateway",
        inventory_yaml=SIMULATED_INVENTORY,
        **service_auth(INTERNAL_TOKEN),
        metering_service_url=NOWHERE,
    ) as gateway:
        targets = {
            "platform": f"127.0.0.1:{platform_port}",
            "gateway": gateway.url.removeprefix("http://"),
        }
        prometheus = running_prometheus(workdir / "prometheus", targets, port=prometheus_port)
        with started_or_skip(prometheus) as prometheus_url:
            settings = platform_settings(
                platform_database,
                workdir / "platform",
                gateway_url=gateway.url,
                prometheus_url=prometheus_url,
            )
            with running_platform(settings, port=platform_port) as platform:
                # the targets are loaded a few seconds after /-/ready: a sample of each
                # before any test counts, so a counter's first step is seen
                wait_until(
                    lambda: _targets_up(prometheus_url) == {"platform": 1, "gateway": 1},
                    timeout=30,
                    what="both targets scraped",
                )
                yield Charted(platform, gateway, prometheus_url)


def _targets_up(prometheus_url: str) -> dict[str, float]:
    """``up`` of each scrape job: 1 where the last scrape of its /metrics succeeded."""
    answer = httpx.get(f"{prometheus_url}/api/v1/query", params={"query": "up"}, timeout=10).json()
    return {r["metric"]["job"]: float(r["value"][1]) for r in answer["data"]["result"]}


def _chart(answer: dict[str, Any], name: str) -> list[dict[str, Any]]:
    series: list[dict[str, Any]] = next(c for c in answer["charts"] if c["name"] == name)["series"]
    return series


def _last(series: list[dict[str, Any]], **labels: str) -> float | None:
    """The newest value of the series with those labels; None: no such series or point."""
    for one in series:
        if labels.items() <= one["labels"].items() and one["points"]:
            return float(one["points"][-1][1])
    return None


class TestCharts:
    def test_the_series_of_requests_made_and_a_job_placed(self, charted: Charted) -> None:
        platform, admin = charted.platform, charted.platform.admin
        job_id = new_job_id()
        charted.gateway.crd.create_job(job_id, "alice", "file:///f.pkl", vram_mb=4096)
        for _ in range(20):
            assert platform.http.get("/v1/me", headers=admin.headers).status_code == 200
        answer: dict[str, Any] = {}

        def charted_all() -> bool:
            nonlocal answer
            response = platform.http.get(
                "/v1/admin/console/charts", params={"minutes": 5}, headers=admin.headers
            )
            assert response.status_code == 200, response.text
            answer = response.json()
            return (
                (_last(_chart(answer, "requests"), service="platform_service") or 0) > 0
                and _last(_chart(answer, "gpu_memory"), figure="used") == 4096 * MIB
                and (_last(_chart(answer, "placements")) or 0) > 0
            )

        wait_until(charted_all, timeout=60, what="the platform's requests and the placement")
        assert answer["prometheus_url"] == charted.prometheus_url
        assert [chart["name"] for chart in answer["charts"]] == [chart.name for chart in CHARTS]
        assert answer["step_seconds"] == 5
        assert answer["end"] - answer["start"] == pytest.approx(300)
        # per service: no 5xx is a line at 0; a latency was measured
        assert _last(_chart(answer, "errors"), service="platform_service") == 0
        assert (_last(_chart(answer, "latency_p50"), service="platform_service") or 0) > 0
        assert (_last(_chart(answer, "latency_p99"), service="platform_service") or 0) > 0
        # the gateway: nothing waits; the simulated GPU holds the job's 4 GiB of its 16
        assert _last(_chart(answer, "queue")) == 0
        assert _last(_chart(answer, "placement_failures")) == 0
        memory = _chart(answer, "gpu_memory")
        assert _last(memory, node="sim-node", gpu="0", figure="total") == 16384 * MIB
        assert _last(memory, node="sim-node", gpu="0", figure="held") == 4096 * MIB
        assert _last(_chart(answer, "gpu_utilization"), node="sim-node", gpu="0") == 0.25

    def test_every_service_is_scraped_without_a_token(self, charted: Charted) -> None:
        """Prometheus sends no credential: ``up`` is 1 only where /metrics is public (the
        services label their series themselves: ``service`` is the package)."""
        assert _targets_up(charted.prometheus_url) == {"platform": 1, "gateway": 1}

    def test_a_user_is_refused_and_a_window_out_of_bounds_is_named(self, charted: Charted) -> None:
        platform = charted.platform
        user = platform.new_user()
        refused = platform.http.get("/v1/admin/console/charts", headers=user.headers)
        assert refused.status_code == 403
        for minutes in (1, 24 * 60 + 1):
            bad = platform.http.get(
                "/v1/admin/console/charts",
                params={"minutes": minutes},
                headers=platform.admin.headers,
            )
            assert bad.status_code == 422
            assert bad.json()["error"]["fields"][0]["field"].endswith("minutes")


class TestWithoutPrometheus:
    def test_no_url_set_is_a_503_naming_the_setting(self, lone_platform: PlatformServer) -> None:
        response = lone_platform.http.get(
            "/v1/admin/console/charts", headers=lone_platform.admin.headers
        )
        assert response.status_code == 503
        error = response.json()["error"]
        assert error["code"] == "metrics_unavailable"
        assert error["setting"] == "PLATFORM_PROMETHEUS_URL"
        assert "PLATFORM_PROMETHEUS_URL" in error["message"]

    def test_a_prometheus_that_does_not_answer_is_named(self) -> None:
        with pytest.raises(MetricsUnavailable) as raised:
            asyncio.run(read_console_charts(NOWHERE, minutes=60, timeout=5))
        assert raised.value.details == {"setting": "PLATFORM_PROMETHEUS_URL", "url": NOWHERE}
        assert "PLATFORM_PROMETHEUS_URL" in raised.value.message
