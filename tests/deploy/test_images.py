"""docker/Dockerfile (the services) and docker/ray-worker/Dockerfile (a node's Ray worker,
its CPU variant) built here, on a Docker daemon of the test's own, from base images made
from Debian's packages (tools/images) and wheels at the head's versions, with no network in
the builds: both carry the head's Python to the patch level and its Ray, the worker the
job sandbox's tools and the default job image, the services the registry binary and wg.
Nothing of the daemon is left on the host (tests.support.images)."""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Iterator

import pytest
import ray

from tests.support.images import (
    BASE_IMAGE,
    JOB_IMAGE,
    REGISTRY_IMAGE,
    WHEELS_IMAGE,
    PrivateDocker,
    image_inputs,
    private_docker,
)
from tests.support.unavailable import fail_or_skip

SERVICES = "gridweave/services:test"
WORKER = "gridweave/ray-worker:test"
VERSIONS = "import platform, ray; print(platform.python_version(), ray.__version__)"


@pytest.fixture(scope="module")
def daemon() -> Iterator[PrivateDocker]:
    if os.geteuid() != 0:
        fail_or_skip("private Docker daemon", PermissionError("it runs as root"))
    missing = [
        tool
        for tool in ("dockerd", "docker", "unshare", "nsenter", "mmdebstrap")
        if shutil.which(tool) is None
    ]
    if missing:
        fail_or_skip("private Docker daemon", FileNotFoundError(f"missing {missing}"))
    inputs = image_inputs()
    with private_docker(inputs.docker_config) as docker:
        docker.import_tree(inputs.base_tar, BASE_IMAGE)
        docker.import_tree(inputs.job_rootfs, JOB_IMAGE)
        docker.files_image(inputs.wheels, WHEELS_IMAGE)
        docker.files_image(inputs.registry_dir, REGISTRY_IMAGE)
        offline = {"BASE_IMAGE": BASE_IMAGE, "WHEELS_FROM": WHEELS_IMAGE, "PIP_OFFLINE": "1"}
        docker.build("docker/Dockerfile", SERVICES, {**offline, "REGISTRY_FROM": REGISTRY_IMAGE})
        docker.build(
            "docker/ray-worker/Dockerfile",
            WORKER,
            {**offline, "JOB_IMAGE": JOB_IMAGE, "GPU_PLATFORM": "cpu"},
        )
        yield docker


@pytest.mark.timeout(1800)
class TestImages:
    def test_both_images_run_the_heads_python_and_ray(self, daemon: PrivateDocker) -> None:
        head = f"{platform.python_version()} {ray.__version__}"
        for image in (SERVICES, WORKER):
            assert daemon.run_in(image, ["python", "-c", VERSIONS]).split() == head.split()

    def test_the_services_image_runs_every_service_as_gridweave(
        self, daemon: PrivateDocker
    ) -> None:
        assert daemon.run_in(SERVICES, ["id", "-un"]).strip() == "gridweave"
        assert "registry github.com/distribution/distribution/v3" in daemon.run_in(
            SERVICES, ["registry", "--version"]
        )
        for command in ("gridweave-platform", "gridweave-job-gateway", "wg", "wg-quick"):
            assert daemon.run_in(SERVICES, ["sh", "-c", f"command -v {command}"]).strip()

    def test_the_worker_image_runs_jobs_sandboxed_as_the_head(self, daemon: PrivateDocker) -> None:
        for tool in ("runc", "umoci", "skopeo", "iptables", "ip", "nsenter"):
            assert daemon.run_in(WORKER, ["sh", "-c", f"command -v {tool}"]).strip(), tool
        rootfs = "/var/cache/gridweave/sandbox/base/rootfs"
        job_python = daemon.run_in(WORKER, [f"{rootfs}/usr/bin/python3", "-V"]).strip()
        assert job_python.startswith("Python 3.11.")
        located = "from gridweave_runtime.job_images import default_rootfs; print(default_rootfs())"
        assert daemon.run_in(WORKER, ["python", "-c", located]).strip() == rootfs
        assert daemon.run_in(WORKER, ["python", "-c", "import job_gateway.sandbox.driver"]) == ""
