"""Jobs in their owners' images on Ray, end to end: the gateway asks the platform for the
owner's pull token, the node pulls the pinned image from the real registry once and runs
the job in it; an owner who may no longer pull it, and an image that cannot run a job, fail
the job naming why, billed no GPU time."""

from __future__ import annotations

from collections.abc import Iterator
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
from tests.platform_service.factories import User
from tests.support.job_images import JobImages, images_on_a_platform, sandbox_with_image_cache
from tests.support.kubeapi import KubeAPI
from tests.support.postgres import PostgresTestServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres, pytest.mark.timeout(300)]

MARKER = "alice's tools\n"


@pytest.fixture(scope="module")
def images(
    postgres: PostgresTestServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JobImages]:
    with images_on_a_platform(postgres, tmp_path_factory.mktemp("images")) as images:
        yield images


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxConfig]:
    with sandbox_with_image_cache() as config:
        yield config


@pytest.fixture(scope="module")
def alice(images: JobImages) -> User:
    return images.platform.new_user()


@pytest.fixture(scope="module")
def alice_tools(images: JobImages, alice: User) -> str:
    repository = f"{alice.user_id}/tools"
    digest = images.push_image(alice, repository, {"opt/tools/marker.txt": MARKER.encode()})
    return f"{repository}@{digest}"


def _stderr(store: LocalObjectStore, job_id: str) -> str:
    return store.get(store.uri(attempt_objects(job_id, 0).stderr)).decode()


class TestJobImages:
    def test_a_job_runs_in_its_owners_image_pulled_once_per_node(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
        images: JobImages,
        sandbox: SandboxConfig,
        alice: User,
        alice_tools: str,
    ) -> None:
        path = "/opt/tools/marker.txt"
        with running_executor(
            kubeapi,
            kube_namespace,
            storage,
            sandbox=sandbox,
            images_from=(images.platform.url, images.address),
        ):
            common: dict[str, Any] = {"node": "node-a", "gpus": [0], "user": alice.user_id}
            first = allocated_job(crd, store, fn.read_text, path, image=alice_tools, **common)
            first_job = wait_for_phase(crd, first, JOB_TERMINAL_PHASES)
            second = allocated_job(crd, store, fn.read_text, path, image=alice_tools, **common)
            plain = allocated_job(crd, store, fn.read_text, path, **common)
            done = {
                job_id: wait_for_phase(crd, job_id, JOB_TERMINAL_PHASES)
                for job_id in (second, plain)
            }
        done[first] = first_job
        for job_id in done:
            assert done[job_id].phase is JobPhase.COMPLETED, done[job_id].status
        results = {
            job_id: cloudpickle.loads(store.get(done[job_id].status.result_ref or ""))
            for job_id in done
        }
        assert results == {first: MARKER, second: MARKER, plain: None}
        assert f"gridweave: pulled {alice_tools}" in _stderr(store, first)
        assert "pulled" not in _stderr(store, second)  # the node's cache

    def test_an_owner_refused_the_image_fails_the_job_before_it_runs(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
        images: JobImages,
        sandbox: SandboxConfig,
        alice_tools: str,
    ) -> None:
        bob = images.platform.new_user()  # alice never shared it (or withdrew the share)
        with running_executor(
            kubeapi,
            kube_namespace,
            storage,
            sandbox=sandbox,
            images_from=(images.platform.url, images.address),
        ):
            job_id = allocated_job(
                crd,
                store,
                fn.read_text,
                "/etc/hostname",
                node="node-a",
                gpus=[0],
                user=bob.user_id,
                image=alice_tools,
            )
            job = wait_for_phase(crd, job_id, JOB_TERMINAL_PHASES)
        assert job.phase is JobPhase.FAILED
        assert job.status.reason == "ImageRefused"
        assert alice_tools.partition("@")[0] in (job.status.message or "")
        assert job.status.started_at is None and not job.status.wall_seconds  # no GPU time

    def test_an_image_that_cannot_run_a_job_fails_it_saying_why(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
        images: JobImages,
        sandbox: SandboxConfig,
        alice: User,
    ) -> None:
        repository = f"{alice.user_id}/bare"
        digest = images.push_image(alice, repository, {"data.txt": b"x"}, on_default=False)
        with running_executor(
            kubeapi,
            kube_namespace,
            storage,
            sandbox=sandbox,
            images_from=(images.platform.url, images.address),
        ):
            job_id = allocated_job(
                crd,
                store,
                fn.read_text,
                "/data.txt",
                node="node-a",
                gpus=[0],
                user=alice.user_id,
                image=f"{repository}@{digest}",
            )
            job = wait_for_phase(crd, job_id, JOB_TERMINAL_PHASES)
        assert job.phase is JobPhase.FAILED
        assert job.status.reason == "ImagePullFailed"
        assert "has no python3" in (job.status.message or "")
        assert job.status.wall_seconds == 0  # the function never started: no GPU time
