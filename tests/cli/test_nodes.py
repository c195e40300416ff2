"""``gridweave nodes`` on the whole stack: each node's free CPU and memory (what the
gateway's allocations leave of what the node declares) above its GPUs, within 80 columns."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.cli.helpers import Invoke, as_user
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway
from tests.platform_service.factories import PlatformServer, submit_body
from tests.support.credentials import service_auth
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

CAPACITY_YAML = """
nodes:
  - name: gpu-cap
    cpu_millis: 16000
    memory_mb: 65536
    gpus:
      - {index: 0, vendor: nvidia, model: NVIDIA A100 80GB, vram_mb: 81920}
  - name: gpu-bare
    gpus:
      - {index: 0, vendor: amd, model: AMD Instinct MI250, vram_mb: 65536}
"""


@pytest.fixture(scope="module")
def gateway(
    kubeapi: KubeAPI, metering: httpx.Client, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayServer]:
    """The platform's gateway over nodes that declare CPU and memory (one declares none)."""
    with running_gateway(
        kubeapi,
        tmp_path_factory.mktemp("gateway"),
        inventory_yaml=CAPACITY_YAML,
        **service_auth(INTERNAL_TOKEN),
        metering_service_url=str(metering.base_url),
        pass_interval_seconds=0.2,
    ) as server:
        yield server


def test_free_cpu_and_memory_at_80_columns(
    platform: PlatformServer,
    credit: CreditServer,
    gridweave: Invoke,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    body = submit_body(vendor="nvidia", vram_mb=8192, cpu_millis=2500, memory_mb=12288)
    answer = platform.http.post("/v1/jobs", json=body, headers=user.headers)
    assert answer.status_code == 201, answer.text

    def placed() -> bool:
        nodes = platform.http.get("/v1/nodes", headers=user.headers).json()["nodes"]
        return any(node["cpu_held_millis"] == 2500 for node in nodes)

    wait_until(placed, what="the job's CPU held")
    as_user(monkeypatch, platform, user)
    monkeypatch.setenv("COLUMNS", "80")
    shown = gridweave("nodes")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0].split()[:3] == ["node", "CPU", "free"]
    capacity = next(line for line in lines if line.startswith("gpu-cap"))
    assert "13.5 / 16" in capacity and "52 GiB / 64 GiB" in capacity
    bare = next(line for line in lines if line.startswith("gpu-bare"))
    assert bare.split()[1:3] == ["-", "-"]
    assert "/ 80 GiB" in shown.stdout  # the GPUs' table follows
