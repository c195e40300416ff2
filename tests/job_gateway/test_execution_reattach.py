"""Reattach on boot, and the object store in S3: a new executor adopts what Ray still runs.

The first executor stands for a gateway that died: it stops following without killing
anything, and the next one lists the CRDs (the informer) and follows each Allocated or
Running job again: the actor by its name, else the outcome in the store, else the attempt
is lost (requeued while retries remain, else Failed ``Lost``), unless the job is still
Allocated: then the same attempt starts again.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path

import cloudpickle
import pytest
import ray

from gridweave_controller import CrdClient, JobPhase
from gridweave_controller.phases import JOB_TERMINAL_PHASES
from gridweave_runtime.storage import LocalObjectStore, StorageConfig, attempt_objects
from gridweave_runtime.storage.store import S3ObjectStore
from job_gateway.execution import Outcome, outcome_key
from job_gateway.execution.actors import actor_name, launch_attempt
from job_gateway.execution.settings import WarmSettings
from job_gateway.execution.spares import IdleWorker, WarmPool, worker_key
from tests.job_gateway import execution_functions as fn
from tests.job_gateway.execution_factories import (
    RayWorld,
    allocated_job,
    attempt_spec,
    running_executor,
    unsandboxed,
    wait_for_phase,
)
from tests.support.kubeapi import KubeAPI
from tests.support.s3_server import s3_storage_config
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kubeapi

TERMINAL = JOB_TERMINAL_PHASES


@pytest.fixture
def s3_storage() -> Iterator[StorageConfig]:
    """An S3 API on loopback (moto's server mode) with the gateway's bucket."""
    with s3_storage_config("gridweave-jobs") as config:
        yield config


def running_job_without_worker(crd: CrdClient, job_id: str, *, max_retries: int) -> None:
    """A job Running on node-a whose worker is gone (the gateway and Ray both restarted)."""
    crd.create_job(job_id, "alice", "file:///none.pkl", vram_mb=1024, max_retries=max_retries)
    crd.set_job_allocated(job_id, "node-a", [0])
    crd.set_job_running(job_id)


class TestReattach:
    def test_a_new_executor_adopts_a_running_job_without_running_it_twice(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        tmp_path: Path,
        storage: StorageConfig,
        store: LocalObjectStore,
    ) -> None:
        runs = tmp_path / "runs"
        with running_executor(kubeapi, kube_namespace, storage, sandbox=unsandboxed()):
            job_id = allocated_job(crd, store, fn.count_runs, str(runs), 4, node="node-b", gpus=[0])
            wait_for_phase(crd, job_id, {JobPhase.RUNNING})
            wait_until(runs.exists, what="the first run to start")
        # the first gateway is gone; its worker still runs on Ray
        assert crd.get_job(job_id).phase is JobPhase.RUNNING
        with running_executor(kubeapi, kube_namespace, storage, sandbox=unsandboxed()) as second:
            assert second.following() == {job_id: 0}
            job = wait_for_phase(crd, job_id, TERMINAL)
        assert job.phase is JobPhase.COMPLETED, job.status.message
        assert cloudpickle.loads(store.get(job.status.result_ref or "")) == 1
        assert len(runs.read_text().splitlines()) == 1

    def test_an_allocated_job_whose_actor_a_dead_gateway_launched_runs_once(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        tmp_path: Path,
        storage: StorageConfig,
        store: LocalObjectStore,
    ) -> None:
        runs = tmp_path / "runs"
        job_id = allocated_job(crd, store, fn.count_runs, str(runs), 3, node="node-c", gpus=[0])
        job = crd.get_job(job_id)
        # the dead gateway launched the actor and died before writing Running
        spec = dataclasses.replace(
            attempt_spec(job_id, job.spec.function_ref, storage, args_ref=job.spec.args_ref),
            sandbox=unsandboxed(),
        )
        launch_attempt(spec, "node-c")
        wait_until(runs.exists, what="the first run to start")
        with running_executor(kubeapi, kube_namespace, storage, sandbox=unsandboxed()):
            done = wait_for_phase(crd, job_id, TERMINAL)
        assert done.phase is JobPhase.COMPLETED, done.status.message
        assert cloudpickle.loads(store.get(done.status.result_ref or "")) == 1
        assert len(runs.read_text().splitlines()) == 1

    def test_an_allocated_job_a_dead_gateway_handed_to_a_warm_worker_runs_once(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        tmp_path: Path,
        storage: StorageConfig,
        store: LocalObjectStore,
    ) -> None:
        """The dead gateway handed the attempt to a warm worker (the hand-over recorded) and
        died before writing Running; the worker finished it. The next gateway, warm workers
        on, finishes the job from its outcome: it never runs it again."""
        runs = tmp_path / "runs"
        job_id = allocated_job(crd, store, fn.count_runs, str(runs), 0.5, node="node-a", gpus=[0])
        job = crd.get_job(job_id)
        spec = dataclasses.replace(
            attempt_spec(job_id, job.spec.function_ref, storage, args_ref=job.spec.args_ref),
            sandbox=unsandboxed(),
        )
        pool = WarmPool(store, spares=1, max_idle=1, idle_seconds=30)
        pool.refill(["node-a"])
        taken: list[IdleWorker] = []

        def take_spare() -> bool:
            worker = pool.take("node-a", "alice", {})  # None until its process runs
            taken.extend([] if worker is None else [worker])
            return bool(taken)

        wait_until(take_spare, what="the spare to start")
        worker = taken[0]
        ray.get(pool.hand_over(worker, spec).run, timeout=60)  # ran and finished
        assert crd.get_job(job_id).phase is JobPhase.ALLOCATED
        with running_executor(
            kubeapi, kube_namespace, storage, sandbox=unsandboxed(), warm=WarmSettings(1, 4, 30)
        ):
            done = wait_for_phase(crd, job_id, TERMINAL)
        assert done.phase is JobPhase.COMPLETED, done.status.message
        assert cloudpickle.loads(store.get(done.status.result_ref or "")) == 1
        assert len(runs.read_text().splitlines()) == 1  # one run, counted
        assert done.status.wall_seconds is not None and 0.4 < done.status.wall_seconds < 5

    def test_an_allocated_job_handed_over_by_a_gateway_that_died_before_its_worker_runs_once(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        tmp_path: Path,
        storage: StorageConfig,
        store: LocalObjectStore,
    ) -> None:
        """The dead gateway recorded the hand-over and died before its actor existed: no
        worker, no outcome, the job still Allocated. The next gateway starts the same
        attempt, so a job with no retries left is neither lost nor failed."""
        runs = tmp_path / "runs"
        job_id = allocated_job(crd, store, fn.count_runs, str(runs), 0.2, node="node-a", gpus=[0])
        store.put(worker_key(job_id, 0), actor_name(job_id, 0).encode())
        with running_executor(kubeapi, kube_namespace, storage, sandbox=unsandboxed()):
            done = wait_for_phase(crd, job_id, TERMINAL)
        assert done.phase is JobPhase.COMPLETED, done.status.message
        assert done.status.attempts == 0
        assert cloudpickle.loads(store.get(done.status.result_ref or "")) == 1
        assert len(runs.read_text().splitlines()) == 1

    def test_lost_attempts_are_requeued_or_failed_and_stored_outcomes_finish_their_job(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
    ) -> None:
        running_job_without_worker(crd, "lost-no-retry", max_retries=0)
        running_job_without_worker(crd, "lost-retried", max_retries=1)
        running_job_without_worker(crd, "finished-meanwhile", max_retries=0)
        started = crd.get_job("finished-meanwhile").status.started_at
        assert started is not None
        objects = attempt_objects("finished-meanwhile", 0)
        store.put(objects.result, cloudpickle.dumps("done while no gateway ran"))
        finished_at = started.timestamp() + 0.5
        record = Outcome(
            job_id="finished-meanwhile",
            attempt=0,
            status="ok",
            wall_seconds=0.5,
            started_at=started.timestamp(),
            finished_at=finished_at,
        )
        store.put(outcome_key("finished-meanwhile", 0), record.model_dump_json().encode())
        time.sleep(1.0)  # the gateway comes back later than the job finished
        with running_executor(kubeapi, kube_namespace, storage):
            failed = wait_for_phase(crd, "lost-no-retry", TERMINAL)
            requeued = wait_for_phase(crd, "lost-retried", {JobPhase.PENDING})
            finished = wait_for_phase(crd, "finished-meanwhile", TERMINAL)
        assert failed.phase is JobPhase.FAILED and failed.status.reason == "Lost"
        assert requeued.status.attempts == 1 and requeued.status.reason == "Lost"
        assert requeued.status.node is None  # the allocation is released
        assert finished.phase is JobPhase.COMPLETED
        assert finished.status.result_ref == store.uri(objects.result)
        # billed to the worker's finish, not to when this gateway came back
        assert finished.status.wall_seconds == pytest.approx(0.5, abs=0.01)


class TestS3:
    def test_results_tracebacks_and_outputs_go_to_s3(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        s3_storage: StorageConfig,
    ) -> None:
        store = S3ObjectStore(s3_storage)
        with running_executor(kubeapi, kube_namespace, s3_storage):
            ok = allocated_job(crd, store, fn.report, "to s3", node="node-a", gpus=[1])
            bad = allocated_job(crd, store, fn.fail, 7, node="node-c", gpus=[0])
            done = {job_id: wait_for_phase(crd, job_id, TERMINAL) for job_id in (ok, bad)}
        assert done[ok].phase is JobPhase.COMPLETED
        result_ref = done[ok].status.result_ref or ""
        assert result_ref == f"s3://gridweave-jobs/jobs/{ok}/attempt-0/result.pkl"
        seen = cloudpickle.loads(store.get(result_ref))
        outcome = json.loads(store.get(store.uri(outcome_key(ok, 0))))
        assert outcome["ray_node_id"] == ray_world.node_ids["node-a"]
        assert seen["CUDA_VISIBLE_DEVICES"] == "1"
        assert store.get(store.uri(attempt_objects(ok, 0).stdout)).startswith(b"to s3\n")
        assert done[bad].phase is JobPhase.FAILED and done[bad].status.reason == "Exception"
        remote = store.get(store.uri(attempt_objects(bad, 0).error)).decode()
        assert remote.endswith("ValueError: boom 7\n")
        assert store.get(store.uri(attempt_objects(bad, 0).stdout)) == b"about to fail\n"
