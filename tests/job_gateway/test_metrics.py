"""The gateway's /metrics read over HTTP after real placements, and /healthz."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from gridweave_controller import JobPhase
from gridweave_controller.aio import AsyncCrdClient
from gridweave_runtime.storage import LocalObjectStore
from job_gateway.gateway import Gateway
from job_gateway.inventory import StaticFileSource
from job_gateway.metrics import GatewayMetrics
from job_gateway.settings import GatewaySettings
from tests.job_gateway.gateway_factories import INVENTORY_YAML, new_job_id, running_gateway
from tests.job_gateway.metrics_reading import metric_value
from tests.support.credentials import service_auth
from tests.support.kubeapi import KubeAPI
from tests.support.memory_store import AsyncMemoryStore, MemoryStore

pytestmark = pytest.mark.kubeapi

GIB = 1024
HELD = (JobPhase.ALLOCATED, JobPhase.RUNNING)
QUEUE = "gridweave_gateway_queue_length"


def wait_for(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class TestMetrics:
    def test_placements_queue_latency_allocation_and_fragmentation(
        self, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        # gpu-a: two ready 80 GiB NVIDIA GPUs; gpu-b: an AMD GPU on a NotReady node
        with running_gateway(kubeapi, tmp_path, pass_interval_seconds=60.0) as gw:
            placed = [new_job_id() for _ in range(3)]
            for job_id in placed:
                gw.crd.create_job(job_id, "alice", "file:///f.pkl", vram_mb=40 * GIB)
            for job_id in placed:
                gw.crd.wait_for_job(job_id, HELD, timeout=30)
            # 120 of 160 GiB held (binpack: 80 + 40): an 80 GiB job cannot fit in the 40 left
            gw.crd.create_job(new_job_id(), "bob", "file:///f.pkl", vram_mb=80 * GIB, priority=5)
            gw.crd.create_job(new_job_id(), "bob", "file:///f.pkl", vram_mb=GIB, vendor="amd")
            wait_for(
                lambda: (
                    metric_value(gw.http, QUEUE, priority="5") == 1
                    and metric_value(gw.http, QUEUE, priority="0") == 1
                ),
                "both waiting jobs in the queue",
            )
            # the capacity gauges are measured at most once a second, never left stale
            wait_for(
                lambda: metric_value(gw.http, "gridweave_gateway_fragmented_vram_mb") > 0,
                "the fragmentation gauge",
                timeout=5,
            )

            def value(name: str, **labels: str) -> float:
                return metric_value(gw.http, f"gridweave_gateway_{name}", **labels)

            assert value("placements_total") == 3
            assert value("placement_failures_total") == 0
            assert value("placement_latency_seconds_count") == 3
            # created and placed within this test: seconds, not minutes (creation is whole s)
            assert 0 <= value("placement_latency_seconds_sum") < 3 * 60
            assert value("pass_seconds_count") >= 3
            assert value("vram_allocation_rate") == pytest.approx(120 / 160)
            # 40 GiB free, on a GPU neither waiting job can use (too small; not AMD)
            assert value("fragmented_vram_mb") == 40 * GIB
            assert value("fragmentation_ratio") == pytest.approx(1.0)
            assert value("requeues_total") == 0
            # each GPU's VRAM and what is held there, per node and GPU (binpack: 80 + 40)
            held = {
                (node, gpu): metric_value(
                    gw.http, "gridweave_gpu_memory_held_bytes", node=node, gpu=gpu
                )
                for node, gpu in (("gpu-a", "0"), ("gpu-a", "1"), ("gpu-b", "0"))
            }
            assert sorted(held.values()) == [0, 40 * 2**30, 80 * 2**30]
            assert held[("gpu-b", "0")] == 0
            total = metric_value(
                gw.http, "gridweave_gpu_memory_total_bytes", node="gpu-b", vendor="amd"
            )
            assert total == 64 * 2**30
            assert value("usage_reports_total", outcome="sent") == 0
            assert value("usage_reports_total", outcome="failed") == 0
            # a requeue (the executor lost the worker) is counted from the informer
            gw.crd.set_job_pending(placed[0], "WorkerLost", "the worker died")
            wait_for(lambda: value("requeues_total") == 1, "the requeue counted")


class TestHealth:
    def test_healthz_answers_200_once_the_gateway_runs(
        self, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        with running_gateway(kubeapi, tmp_path) as gw:
            response = gw.http.get("/healthz")
            assert (response.status_code, response.json()) == (200, {"status": "ok"})

    def test_healthy_only_once_synced_and_while_every_loop_runs(self, tmp_path: Path) -> None:
        inventory = tmp_path / "inventory.yaml"
        inventory.write_text(INVENTORY_YAML)

        async def scenario() -> list[bool]:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            gateway = Gateway(
                GatewaySettings(**service_auth("t"), state_dir=tmp_path),
                crd=crd,
                inventory_source=StaticFileSource(inventory),
                store=LocalObjectStore(tmp_path / "objects"),
            )
            seen = [gateway.healthy()]  # not listed yet
            await gateway.start()
            seen.append(gateway.healthy())
            # the scheduling loop ends (it never should): no longer healthy
            scheduling = next(t for t in gateway._tasks if t.get_name() == "scheduling")
            scheduling.cancel()
            with suppress(asyncio.CancelledError):
                await scheduling
            seen.append(gateway.healthy())
            await gateway.stop()
            seen.append(gateway.healthy())
            return seen

        assert asyncio.run(scenario()) == [False, True, False, False]


class TestHooks:
    def test_requeued_counts_on_the_apps_registry(self) -> None:
        registry = CollectorRegistry()
        metrics = GatewayMetrics(registry)
        metrics.requeued()
        metrics.requeued(2)
        assert registry.get_sample_value("gridweave_gateway_requeues_total") == 3
