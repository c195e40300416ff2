"""A job's limits: what it asked for, else the node's defaults per GPU slice, and how the
container's configuration carries them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from job_gateway.sandbox.attempt import SandboxedJob, limits_for
from job_gateway.sandbox.oci import ContainerLimits, container_config
from job_gateway.sandbox.settings import SandboxSettings

CONFIG = SandboxSettings(memory_mb_per_gpu=1000, cpus_per_gpu=1.5, pids=99).config()


def job(gpus: int, memory_mb: int | None = None, cpu_millis: int | None = None) -> SandboxedJob:
    return SandboxedJob("u", "nvidia", tuple(range(gpus)), gpus, {}, memory_mb, cpu_millis)


class TestLimits:
    def test_the_defaults_scale_with_the_gpus(self) -> None:
        limits = limits_for(CONFIG, job(3))
        assert (limits.memory_mb, limits.cpus, limits.pids) == (3000, 4.5, 99)

    def test_what_the_job_asked_for_wins(self) -> None:
        limits = limits_for(CONFIG, job(3, memory_mb=256, cpu_millis=500))
        assert (limits.memory_mb, limits.cpus) == (256, 0.5)


class TestContainerConfig:
    def config(self, **limits: float) -> dict[str, Any]:
        values = {"memory_mb": 512, "cpus": 0.5, "pids": 64, "scratch_mb": 100} | limits
        return container_config(
            args=["python3"],
            rootfs=Path("/image"),
            runner_dir=Path("/runner"),
            host_uid=2_000_001,
            limits=ContainerLimits(**values),  # type: ignore[arg-type]
            environment={"CUDA_VISIBLE_DEVICES": "0"},
        )

    def test_the_cgroup_limits(self) -> None:
        resources = self.config()["linux"]["resources"]
        assert resources["memory"] == {"limit": 512 * 2**20, "swap": 512 * 2**20}
        assert resources["cpu"] == {"quota": 50_000, "period": 100_000}
        assert resources["pids"] == {"limit": 64}

    def test_no_capability_no_host_path_but_the_image_and_the_runner(self) -> None:
        config = self.config()
        process = config["process"]
        assert all(not caps for caps in process["capabilities"].values())
        assert process["noNewPrivileges"] is True
        binds = {m["source"] for m in config["mounts"] if m["type"] == "bind"}
        assert binds == {"/runner"}
        assert config["root"] == {"path": "/image", "readonly": True}
        kinds = {n["type"] for n in config["linux"]["namespaces"]}
        assert kinds == {"pid", "network", "ipc", "uts", "mount", "user"}

    def test_root_on_the_host_is_refused(self) -> None:
        with pytest.raises(ValueError, match="never root"):
            container_config(
                args=["python3"],
                rootfs="/image",
                runner_dir="/runner",
                host_uid=0,
                limits=ContainerLimits(512, 1.0, 64, 100),
                environment={},
            )
