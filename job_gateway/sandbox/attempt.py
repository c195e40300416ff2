"""One attempt in its sandbox: from the job's owner, GPUs and inputs to a finished container."""

from __future__ import annotations

from collections.abc import Sequence

from job_gateway.sandbox.container import ContainerRun, ContainerSpec, run_in_container
from job_gateway.sandbox.gpus import gpu_devices, renumbered
from job_gateway.sandbox.oci import ContainerLimits
from job_gateway.sandbox.runner_dir import runner_dir
from job_gateway.sandbox.settings import SandboxConfig
from job_gateway.sandbox.uids import user_uid

__all__ = ["SandboxedJob", "limits_for", "run_sandboxed"]

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SandboxedJob:
    """Who runs it and on what: the owner (its uid), the GPUs, the visibility variables."""

    user_id: str
    vendor: str
    gpu_indices: tuple[int, ...]
    gpu_count: int
    environment: dict[str, str]


def limits_for(config: SandboxConfig, gpu_count: int) -> ContainerLimits:
    """The job's limits: the node's defaults per GPU slice, times its GPUs."""
    slices = max(1, gpu_count)
    return ContainerLimits(
        memory_mb=config.memory_mb_per_gpu * slices,
        cpus=config.cpus_per_gpu * slices,
        pids=config.pids,
        scratch_mb=config.scratch_mb,
    )


def run_sandboxed(
    config: SandboxConfig,
    job: SandboxedJob,
    *,
    function: bytes,
    arguments: bytes,
    stdout: int,
    stderr: int,
    extra_environment: Sequence[tuple[str, str]] = (),
) -> ContainerRun:
    """Run the runner on the inputs in a container of ``job``'s owner."""
    devices = gpu_devices(config.device_dir, job.vendor, job.gpu_indices)
    environment = {**renumbered(job.environment, devices), **dict(extra_environment)}
    spec = ContainerSpec(
        runtime=config.runtime,
        state_dir=config.state_dir,
        rootfs=config.rootfs.resolve(),
        runner_dir=runner_dir(config.state_dir),
        host_uid=user_uid(config.state_dir, job.user_id),
        limits=limits_for(config, job.gpu_count),
        environment=environment,
        devices=devices,
        max_result_bytes=config.max_result_mb * 1024 * 1024,
    )
    return run_in_container(
        spec, function=function, arguments=arguments, stdout=stdout, stderr=stderr
    )
