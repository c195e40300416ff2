"""Node loss in the running gateway, on the real Kubernetes API, with a static inventory file
that is rewritten while it runs: a cordoned node keeps its jobs, a node dropped from the file
has them requeued onto another node (or Failed ``NodeLost`` when no retry is left), and its
endpoints sent back to placement."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gridweave_controller import Endpoint, EndpointPhase, JobPhase
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway, submit_body
from tests.job_gateway.metrics_reading import metric_value
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kubeapi

REFRESH_S = 0.1
GRACE_S = 0.4
_GPU = "{index: 0, vendor: nvidia, model: NVIDIA A100 80GB, vram_mb: 81920}"


def _inventory(**nodes: bool) -> str:
    """A file of one-GPU nodes, each name mapped to whether it is cordoned."""
    lines = ["nodes:"]
    for name, cordoned in nodes.items():
        lines += [
            f"  - name: {name}",
            f"    cordoned: {str(cordoned).lower()}",
            f"    gpus: [{_GPU}]",
        ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def gateway(kubeapi: KubeAPI, tmp_path: Path) -> Iterator[GatewayServer]:
    """The gateway over an inventory file of gpu-x (free) and gpu-y (cordoned) in
    ``tmp_path``, read every REFRESH_S; a node gone from it for GRACE_S is lost."""
    with running_gateway(
        kubeapi,
        tmp_path,
        inventory_yaml=_inventory(**{"gpu-x": False, "gpu-y": True}),
        inventory_refresh_seconds=REFRESH_S,
        node_lost_grace_seconds=GRACE_S,
        pass_interval_seconds=0.2,
    ) as served:
        yield served


def _rewrite(path: Path, text: str) -> None:
    """Replace the file at once (the gateway never reads half of it)."""
    staged = path.with_suffix(".new.yaml")
    staged.write_text(text)
    staged.replace(path)


def _schedulable(gateway: GatewayServer, node: str) -> bool:
    answer = gateway.http.get("/v1/inventory").json()
    return bool(next(n for n in answer["nodes"] if n["name"] == node)["gpus"][0]["schedulable"])


def _placement(gateway: GatewayServer, job_id: str) -> tuple[JobPhase, str | None, int]:
    job = gateway.crd.get_job(job_id)
    return job.phase, job.status.node, job.status.attempts


def _wait_for(
    gateway: GatewayServer, job_id: str, placement: tuple[JobPhase, str | None, int]
) -> None:
    wait_until(lambda: _placement(gateway, job_id) == placement, what=f"{job_id}: {placement}")


class TestNodeLossInTheGateway:
    def test_cordon_keeps_jobs_and_a_dropped_node_has_them_requeued(
        self, gateway: GatewayServer, tmp_path: Path
    ) -> None:
        inventory_file = tmp_path / "inventory.yaml"
        retried, last_try = (
            gateway.http.post(
                "/v1/jobs", json=submit_body(vendor="nvidia", max_retries=retries)
            ).json()["job_id"]
            for retries in (2, 0)
        )
        for job_id in (retried, last_try):  # gpu-y is cordoned: both land on gpu-x
            _wait_for(gateway, job_id, (JobPhase.ALLOCATED, "gpu-x", 0))

        # cordoned: no new work, and the work there stays
        _rewrite(inventory_file, _inventory(**{"gpu-x": True, "gpu-y": True}))
        wait_until(lambda: not _schedulable(gateway, "gpu-x"), what="gpu-x cordoned")
        time.sleep(GRACE_S + 3 * REFRESH_S)  # past the grace period, several reads
        for job_id in (retried, last_try):
            assert _placement(gateway, job_id) == (JobPhase.ALLOCATED, "gpu-x", 0)

        # gpu-x leaves the file; gpu-y takes work again
        _rewrite(inventory_file, _inventory(**{"gpu-y": False}))
        _wait_for(gateway, retried, (JobPhase.ALLOCATED, "gpu-y", 1))  # requeued, placed
        failed = gateway.crd.wait_for_job(last_try, {JobPhase.FAILED}, timeout=30)
        assert failed.status.reason == "NodeLost"
        assert re.fullmatch(
            r"node gpu-x is gone from the inventory \(for \d+ s\); no retries left \(0\)",
            failed.status.message or "",
        )
        assert metric_value(gateway.http, "gridweave_gateway_requeues_total") == 1


def _endpoint_in(gateway: GatewayServer, name: str, phase: EndpointPhase) -> Endpoint:
    wait_until(lambda: gateway.crd.get_endpoint(name).phase is phase, what=f"{name}: {phase}")
    return gateway.crd.get_endpoint(name)


def _held_mb(gateway: GatewayServer) -> dict[str, int]:
    answer = gateway.http.get("/v1/inventory").json()
    return {n["name"]: sum(g["held_mb"] for g in n["gpus"]) for n in answer["nodes"]}


class TestEndpointNodeLossInTheGateway:
    def test_an_endpoint_on_a_lost_node_waits_pending_then_is_placed_elsewhere(
        self, gateway: GatewayServer, tmp_path: Path
    ) -> None:
        inventory_file = tmp_path / "inventory.yaml"
        crd = gateway.crd
        name = crd.create_endpoint(
            "ep-lost", "user-1", vram_mb=20000, vendor="nvidia", function_ref="fn/ep.pkl"
        ).name
        placed = _endpoint_in(gateway, name, EndpointPhase.DEPLOYING)
        assert placed.status.node == "gpu-x"
        # the reconciler's write (no Serve here): the run billing counts starts
        running = crd.set_endpoint_running(name, "http://127.0.0.1:8900/gw/ep-lost")
        assert _held_mb(gateway)["gpu-x"] == 20000

        # gpu-x leaves the file while gpu-y is cordoned: back to placement, waiting
        _rewrite(inventory_file, _inventory(**{"gpu-y": True}))
        lost = _endpoint_in(gateway, name, EndpointPhase.PENDING)
        assert lost.status.reason == "NodeLost"
        assert re.fullmatch(
            r"node gpu-x is gone from the inventory \(for \d+ s\); placed again",
            lost.status.message or "",
        )
        ready = lost.status.condition("Ready")
        assert ready is not None and (ready.status, ready.reason) == ("False", "NodeLost")
        assert lost.status.node is None and lost.status.url is None
        assert lost.status.stopped_at is not None  # the run ends at the loss
        assert lost.status.started_at == running.status.started_at
        time.sleep(GRACE_S + 3 * REFRESH_S)  # several passes: nothing fits, it waits
        assert crd.get_endpoint(name).phase is EndpointPhase.PENDING
        assert _held_mb(gateway) == {"gpu-y": 0}

        # gpu-y takes work again: placed there, a new run (the lost one's seconds billed)
        _rewrite(inventory_file, _inventory(**{"gpu-y": False}))
        again = _endpoint_in(gateway, name, EndpointPhase.DEPLOYING)
        assert again.status.node == "gpu-y"
        assert again.status.started_at is None and again.status.stopped_at is None
        assert again.status.billed_seconds == lost.status.billed_seconds >= 1
        wait_until(lambda: _held_mb(gateway) == {"gpu-y": 20000}, what="gpu-y held")
