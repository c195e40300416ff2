"""Jobs with pip= requirements on Ray, end to end, on the real PyPI: the node installs them
once (pip's output is the job's log), the next job of the same list finds them built; a
requirement pip cannot install fails the job PipInstallFailed with pip's words, billed no
GPU time."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

from gridweave_controller import CrdClient, JobPhase
from gridweave_controller.phases import JOB_TERMINAL_PHASES
from gridweave_runtime.storage import LocalObjectStore, StorageConfig, attempt_objects
from job_gateway.sandbox.settings import SandboxConfig
from tests.job_gateway import execution_functions as fn
from tests.job_gateway.execution_factories import (
    RayWorld,
    allocated_job,
    running_executor,
    wait_for_phase,
)
from tests.support.kubeapi import KubeAPI
from tests.support.sandbox import sandbox_config

pytestmark = [pytest.mark.kubeapi, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxConfig]:
    """The nodes' sandbox, with a pip cache of this module's own."""
    directory = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="gw-exec-pip-"))
    directory.chmod(0o755)
    config = sandbox_config()
    try:
        yield dataclasses.replace(
            config, pip=dataclasses.replace(config.pip, directory=directory / "pip")
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _stderr(store: LocalObjectStore, job_id: str) -> str:
    return store.get(store.uri(attempt_objects(job_id, 0).stderr)).decode()


class TestPipJobs:
    def test_a_jobs_requirements_are_installed_once_per_node(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
        sandbox: SandboxConfig,
    ) -> None:
        common: dict[str, Any] = {"node": "node-a", "gpus": [0], "pip": ["six==1.16.0"]}
        with running_executor(kubeapi, kube_namespace, storage, sandbox=sandbox):
            first = allocated_job(crd, store, fn.six_from_its_environment, **common)
            first_job = wait_for_phase(crd, first, JOB_TERMINAL_PHASES, timeout=180)
            second = allocated_job(  # another user, the same list: the same environment
                crd,
                store,
                fn.six_from_its_environment,
                user="bob",
                **common,
            )
            second_job = wait_for_phase(crd, second, JOB_TERMINAL_PHASES)
        for job in (first_job, second_job):
            assert job.phase is JobPhase.COMPLETED, job.status
            value = cloudpickle.loads(store.get(job.status.result_ref or ""))
            assert value == "1.16.0 /opt/gridweave/env/six.py"
        assert first_job.spec.pip == ("six==1.16.0",)
        assert "gridweave: installing six==1.16.0" in _stderr(store, first)
        assert "Successfully installed six-1.16.0" in _stderr(store, first)
        assert "gridweave: installing" not in _stderr(store, second)  # built once
        built = [p for p in sandbox.pip.directory.iterdir() if not p.name.startswith(".")]
        assert len(built) == 1

    def test_a_requirement_pip_cannot_install_fails_the_job_billing_nothing(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
        sandbox: SandboxConfig,
    ) -> None:
        missing = "gridweave-no-such-package-7c1e==1.0"
        with running_executor(kubeapi, kube_namespace, storage, sandbox=sandbox):
            job_id = allocated_job(
                crd, store, fn.six_from_its_environment, node="node-a", gpus=[0], pip=[missing]
            )
            job = wait_for_phase(crd, job_id, JOB_TERMINAL_PHASES, timeout=180)
        assert job.phase is JobPhase.FAILED
        assert job.status.reason == "PipInstallFailed"
        assert f"No matching distribution found for {missing}" in (job.status.message or "")
        assert job.status.wall_seconds == 0  # the function never started: no GPU time
        assert f"ERROR: No matching distribution found for {missing}" in _stderr(store, job_id)
