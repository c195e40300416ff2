"""The gateway end to end: submitted over HTTP, placed, run on Ray, its GPUs freed after.

The app with execution on (the test's Ray is already connected in this process, so the
gateway uses it), the real apiserver, the three-node Ray of the execution tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import cloudpickle
import pytest

from gridweave_controller import JobPhase
from gridweave_controller.phases import JOB_TERMINAL_PHASES
from gridweave_runtime.storage import LocalObjectStore, input_objects
from job_gateway.execution import ExecutionSettings, outcome_key
from tests.job_gateway import execution_functions as fn
from tests.job_gateway.execution_factories import INVENTORY_YAML, RayWorld, new_job_id
from tests.job_gateway.gateway_factories import running_gateway, submit_body
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.kubeapi

TERMINAL = JOB_TERMINAL_PHASES


class TestGatewayExecution:
    def test_submitted_jobs_run_on_their_gpus_and_free_them(
        self, ray_world: RayWorld, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        execution = ExecutionSettings(executor_poll_seconds=0.05)
        with running_gateway(
            kubeapi, tmp_path, inventory_yaml=INVENTORY_YAML, execution=execution
        ) as gateway:
            store = LocalObjectStore(gateway.storage_dir)
            ids = []
            for greeting in ("first", "second"):
                job_id = new_job_id("gw")
                inputs = input_objects(job_id)
                body = submit_body(
                    job_id,
                    function_ref=store.put(inputs.function, cloudpickle.dumps(fn.report)),
                    args_ref=store.put(inputs.args, cloudpickle.dumps(((greeting,), {}))),
                    vram_mb=65536,  # both AMD GPUs of node-b, whole: the second job waits
                    gpu_count=2,
                    vendor="amd",
                )
                assert gateway.http.post("/v1/jobs", json=body).status_code == 201
                ids.append(job_id)
            done = [gateway.crd.wait_for_job(job_id, TERMINAL, timeout=90) for job_id in ids]
            results = [gateway.http.get(f"/v1/jobs/{job_id}/result").json() for job_id in ids]
        for job, result in zip(done, results, strict=True):
            assert job.phase is JobPhase.COMPLETED, job.status.message
            assert (job.status.node, job.status.gpu_indices) == ("node-b", (0, 1))
            seen = cloudpickle.loads(store.get(result["result_ref"]))
            outcome = json.loads(store.get(store.uri(outcome_key(job.name, 0))))
            assert outcome["ray_node_id"] == ray_world.node_ids["node-b"]
            assert seen["HIP_VISIBLE_DEVICES"] == "0,1"
            assert seen["CUDA_VISIBLE_DEVICES"] is None
        first, second = done
        assert first.status.finished_at is not None and second.status.allocated_at is not None
        assert second.status.allocated_at >= first.status.finished_at  # freed, then placed
        assert store.get(results[1]["stdout_ref"]).startswith(b"second\n")
