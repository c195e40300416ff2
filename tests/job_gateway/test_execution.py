"""Execution on Ray: jobs run on their node and GPUs, outcomes in the object store and the CRDs.

A real multi-node Ray (three nodes on this machine), the real apiserver, the executor fed
by a job informer as in the gateway. The tests allocate jobs themselves (what the
scheduling loop writes) and read what the workers left in the store.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import signal
from pathlib import Path

import cloudpickle
import pytest

from gridweave_controller import CrdClient, JobPhase
from gridweave_controller.phases import JOB_TERMINAL_PHASES
from gridweave_runtime.storage import LocalObjectStore, StorageConfig, attempt_objects
from job_gateway.execution import outcome_key
from tests.job_gateway import execution_functions as fn
from tests.job_gateway.execution_factories import (
    RayWorld,
    allocated_job,
    marked_pid,
    new_marker,
    process_gone,
    running_executor,
    wait_for_phase,
    worker_of,
)
from tests.support.kubeapi import KubeAPI
from tests.support.sandbox import sandbox_config
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kubeapi

TERMINAL = JOB_TERMINAL_PHASES


class TestPlacement:
    def test_a_job_runs_on_its_node_and_sees_exactly_its_gpus(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
    ) -> None:
        with running_executor(kubeapi, kube_namespace, storage):
            nvidia = allocated_job(
                crd, store, fn.report, "hello", node="node-c", gpus=[1, 3], loud=True
            )
            amd = allocated_job(crd, store, fn.report, "hi", node="node-b", gpus=[1])
            done = {job_id: wait_for_phase(crd, job_id, TERMINAL) for job_id in (nvidia, amd)}
        for job_id, node in ((nvidia, "node-c"), (amd, "node-b")):
            job = done[job_id]
            assert job.phase is JobPhase.COMPLETED, job.status
            objects = attempt_objects(job_id, 0)
            assert job.status.result_ref == store.uri(objects.result)
            result = store.get(job.status.result_ref)
            assert job.status.result_sha256 == hashlib.sha256(result).hexdigest()
            outcome = json.loads(store.get(store.uri(outcome_key(job_id, 0))))
            assert outcome["status"] == "ok" and outcome["ray_node_id"] == ray_world.node_ids[node]
        assert done[nvidia].status.wall_seconds is not None
        seen_nvidia = cloudpickle.loads(store.get(store.uri(attempt_objects(nvidia, 0).result)))
        assert seen_nvidia["CUDA_VISIBLE_DEVICES"] == "1,3"
        assert seen_nvidia["HIP_VISIBLE_DEVICES"] is None
        seen_amd = cloudpickle.loads(store.get(store.uri(attempt_objects(amd, 0).result)))
        assert seen_amd["HIP_VISIBLE_DEVICES"] == "1"
        assert seen_amd["CUDA_VISIBLE_DEVICES"] is None
        assert seen_amd["ROCR_VISIBLE_DEVICES"] is None
        stdout = store.get(store.uri(attempt_objects(nvidia, 0).stdout)).decode()
        assert "HELLO" in stdout and "from a child process" in stdout
        assert store.get(store.uri(attempt_objects(nvidia, 0).stderr)) == b"to stderr\n"


class TestOutcomes:
    def test_an_exception_fails_the_job_and_keeps_the_remote_traceback(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
    ) -> None:
        with running_executor(kubeapi, kube_namespace, storage):
            job_id = allocated_job(crd, store, fn.fail, 42, node="node-a", gpus=[0])
            job = wait_for_phase(crd, job_id, TERMINAL)
        assert job.phase is JobPhase.FAILED
        assert job.status.reason == "Exception"
        assert job.status.message == "ValueError: boom 42"
        assert job.status.result_ref is None
        objects = attempt_objects(job_id, 0)
        remote = store.get(store.uri(objects.error)).decode()
        assert remote.startswith("Traceback (most recent call last):")
        assert "worker.py" not in remote and ", in fail" in remote
        assert remote.endswith("ValueError: boom 42\n")
        assert store.get(store.uri(objects.stdout)) == b"about to fail\n"

    def test_a_job_past_its_memory_fails_out_of_memory_and_is_billed_what_it_ran(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
    ) -> None:
        small = dataclasses.replace(sandbox_config(), memory_mb_per_gpu=128)
        with running_executor(kubeapi, kube_namespace, storage, sandbox=small):
            job_id = allocated_job(crd, store, fn.allocate, 1024, node="node-a", gpus=[0])
            job = wait_for_phase(crd, job_id, TERMINAL)
        assert job.phase is JobPhase.FAILED
        assert job.status.reason == "OutOfMemory"
        assert job.status.message is not None and "128 MiB" in job.status.message
        assert job.status.wall_seconds is not None and job.status.wall_seconds > 0
        assert job.status.billed_seconds is not None and job.status.billed_seconds >= 1

    def test_a_timeout_kills_the_worker_and_times_the_job_out(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        tmp_path: Path,
        store: LocalObjectStore,
    ) -> None:
        marker = new_marker()
        with running_executor(kubeapi, kube_namespace, storage):
            job_id = allocated_job(
                crd,
                store,
                fn.sleep_marked,
                marker,
                600,
                node="node-b",
                gpus=[0],
                timeout_seconds=3,
            )
            pid = marked_pid(marker)
            job = wait_for_phase(crd, job_id, TERMINAL)
            wait_until(lambda: process_gone(pid), what="the timed-out worker to exit")
        assert job.phase is JobPhase.TIMED_OUT, job.status.message
        assert job.status.wall_seconds is not None and job.status.wall_seconds >= 3

    def test_a_cancelled_job_has_its_worker_killed(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        tmp_path: Path,
        store: LocalObjectStore,
    ) -> None:
        marker = new_marker()
        with running_executor(kubeapi, kube_namespace, storage) as executor:
            job_id = allocated_job(
                crd,
                store,
                fn.sleep_marked,
                marker,
                600,
                node="node-a",
                gpus=[1],
            )
            pid = marked_pid(marker)
            crd.set_job_cancelled(job_id, message="cancelled on request")
            wait_until(lambda: process_gone(pid), what="the cancelled worker to exit")
            wait_until(lambda: job_id not in executor.following(), what="the executor to let go")
        assert crd.get_job(job_id).phase is JobPhase.CANCELLED

    def test_a_killed_worker_is_requeued_and_completes_on_the_retry(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        tmp_path: Path,
        store: LocalObjectStore,
    ) -> None:
        marker = new_marker()
        with running_executor(kubeapi, kube_namespace, storage):
            job_id = allocated_job(
                crd,
                store,
                fn.die_on_first_attempt,
                marker,
                600,
                node="node-c",
                gpus=[2],
                max_retries=1,
            )
            contained = marked_pid(marker)
            os.kill(worker_of(contained), signal.SIGKILL)
            wait_until(lambda: process_gone(contained), what="the container to die with it")
            requeued = wait_for_phase(crd, job_id, {JobPhase.PENDING, *TERMINAL})
            assert requeued.phase is JobPhase.PENDING, requeued.status
            assert requeued.status.attempts == 1 and requeued.status.reason == "WorkerLost"
            assert requeued.status.earlier_seconds > 0  # the lost attempt's seconds, kept
            crd.set_job_allocated(job_id, "node-a", [0])  # the scheduling loop's move
            job = wait_for_phase(crd, job_id, TERMINAL)
        assert job.phase is JobPhase.COMPLETED
        assert job.status.wall_seconds is not None and job.status.billed_seconds is not None
        # billed for both attempts: the lost one's seconds and the last one's
        total = job.status.wall_seconds + requeued.status.earlier_seconds
        assert job.status.billed_seconds == math.ceil(total)
        assert job.status.result_ref == store.uri(attempt_objects(job_id, 1).result)
        assert cloudpickle.loads(store.get(job.status.result_ref)) == "second"
