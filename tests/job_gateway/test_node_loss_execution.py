"""Node loss with execution on: the workers on a node dropped from the inventory are killed,
and their jobs requeued onto another node (completing there) or Failed ``NodeLost``.

The app over the real apiserver and the three-node Ray of the execution tests; the static
inventory file is rewritten while the gateway runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cloudpickle
import pytest

from gridweave_controller import JobPhase
from gridweave_controller.phases import JOB_TERMINAL_PHASES
from gridweave_runtime.storage import LocalObjectStore, attempt_objects, input_objects
from job_gateway.execution import ExecutionSettings
from tests.job_gateway import execution_functions as fn
from tests.job_gateway.execution_factories import (
    RayWorld,
    marked_pid,
    new_job_id,
    new_marker,
    process_gone,
)
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway, submit_body
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kubeapi

TERMINAL = JOB_TERMINAL_PHASES
_GPU = "{index: 0, vendor: nvidia, model: Simulated GPU, vram_mb: 24576, simulated: true}"
#: node-a takes the work; node-c (a Ray node too) is cordoned until node-a is lost.
BEFORE = f"""
nodes:
  - {{name: node-a, gpus: [{_GPU}]}}
  - {{name: node-c, cordoned: true, gpus: [{_GPU}]}}
"""
AFTER = f"""
nodes:
  - {{name: node-c, gpus: [{_GPU}]}}
"""


def _submit(gateway: GatewayServer, function: Any, *args: Any, max_retries: int) -> str:
    store = LocalObjectStore(gateway.storage_dir)
    job_id = new_job_id("lost")
    inputs = input_objects(job_id)
    body = submit_body(
        job_id,
        function_ref=store.put(inputs.function, cloudpickle.dumps(function)),
        args_ref=store.put(inputs.args, cloudpickle.dumps((args, {}))),
        vram_mb=1024,
        vendor="nvidia",
        max_retries=max_retries,
    )
    assert gateway.http.post("/v1/jobs", json=body).status_code == 201
    return job_id


class TestNodeLossWithExecution:
    def test_a_lost_nodes_workers_are_killed_and_their_jobs_requeued(
        self, ray_world: RayWorld, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        marker, last_marker = new_marker(), new_marker()
        with running_gateway(
            kubeapi,
            tmp_path,
            inventory_yaml=BEFORE,
            execution=ExecutionSettings(executor_poll_seconds=0.05),
            inventory_refresh_seconds=0.1,
            node_lost_grace_seconds=0.3,
        ) as gateway:
            retried = _submit(gateway, fn.die_on_first_attempt, marker, 600, max_retries=1)
            last_try = _submit(gateway, fn.sleep_marked, last_marker, 600, max_retries=0)
            pids = [marked_pid(marker), marked_pid(last_marker)]  # both run on node-a
            for job_id in (retried, last_try):
                job = gateway.crd.wait_for_job(job_id, {JobPhase.RUNNING}, timeout=60)
                assert job.status.node == "node-a"

            (tmp_path / "inventory.new.yaml").write_text(AFTER)
            (tmp_path / "inventory.new.yaml").replace(tmp_path / "inventory.yaml")
            wait_until(lambda: all(map(process_gone, pids)), what="the workers killed")
            failed = gateway.crd.wait_for_job(last_try, TERMINAL, timeout=60)
            done = gateway.crd.wait_for_job(retried, TERMINAL, timeout=90)

        assert (failed.phase, failed.status.reason) == (JobPhase.FAILED, "NodeLost")
        assert done.phase is JobPhase.COMPLETED, done.status.message
        assert (done.status.node, done.status.attempts) == ("node-c", 1)
        store = LocalObjectStore(gateway.storage_dir)
        assert done.status.result_ref == store.uri(attempt_objects(retried, 1).result)
        assert cloudpickle.loads(store.get(done.status.result_ref)) == "second"
