"""One attempt in its sandbox: from the job's owner, GPUs and inputs to a finished run.

A worker keeps its containers warm (:class:`WarmContainers`): an attempt takes an idle
container of the same owner, image, pip environment, network, limits and GPUs if there is
one whose cgroup holds nothing but the runner, else starts one; after the attempt the
container goes back only if it is still that clean, else it is deleted with everything in
it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from job_gateway.sandbox.config import SandboxConfig
from job_gateway.sandbox.container import Chunk, Container, ContainerRun, ContainerSpec
from job_gateway.sandbox.driver import driver_dir
from job_gateway.sandbox.gpus import gpu_devices, renumbered
from job_gateway.sandbox.images import UnpackedImage
from job_gateway.sandbox.oci import ContainerLimits
from job_gateway.sandbox.runner_dir import runner_dir
from job_gateway.sandbox.uids import user_uid

__all__ = ["SandboxedJob", "WarmContainers", "limits_for", "run_sandboxed", "warm_containers"]

#: Idle containers a worker process keeps (a worker serves one user: one is the usual).
MAX_IDLE_CONTAINERS = 4


@dataclass(frozen=True, slots=True)
class SandboxedJob:
    """Who runs it and on what: the owner (its uid), the GPUs, the visibility variables, and
    the memory (MiB) and CPU (thousandths of a core) it asked for (None: the defaults)."""

    user_id: str
    vendor: str
    gpu_indices: tuple[int, ...]
    gpu_count: int
    environment: dict[str, str]
    memory_mb: int | None = None
    cpu_millis: int | None = None


def limits_for(config: SandboxConfig, job: SandboxedJob) -> ContainerLimits:
    """The job's limits: what it asked for, else the node's defaults per GPU slice times
    its GPUs."""
    slices = max(1, job.gpu_count)
    return ContainerLimits(
        memory_mb=job.memory_mb or config.memory_mb_per_gpu * slices,
        cpus=job.cpu_millis / 1000 if job.cpu_millis else config.cpus_per_gpu * slices,
        pids=config.pids,
        scratch_mb=config.scratch_mb,
    )


def container_spec(
    config: SandboxConfig,
    job: SandboxedJob,
    image: UnpackedImage | None = None,
    python_env: Path | None = None,
) -> ContainerSpec:
    """The container ``job``'s attempts run in on this node: in ``image``, else the node's
    default image, with its pip environment ``python_env`` if it has one, and the node's
    NVIDIA driver files when it has NVIDIA GPUs."""
    devices = gpu_devices(config.device_dir, job.vendor, job.gpu_indices)
    nvidia = any(device.path.startswith("/dev/nvidia") for device in devices)
    return ContainerSpec(
        runtime=config.runtime,
        state_dir=config.state_dir,
        rootfs=(image.rootfs if image is not None else config.rootfs).resolve(),
        image_environment=image.environment if image is not None else (),
        runner_dir=runner_dir(config.state_dir),
        host_uid=user_uid(config.state_dir, job.user_id),
        limits=limits_for(config, job),
        environment=tuple(sorted(renumbered(job.environment, devices).items())),
        devices=devices,
        max_result_bytes=config.max_result_mb * 1024 * 1024,
        network=config.job_egress,
        python_env=python_env,
        driver=driver_dir(config.state_dir, config.driver_search) if nvidia else None,
    )


class WarmContainers:
    """A worker process's idle containers, by what they were started for."""

    def __init__(self, max_idle: int = MAX_IDLE_CONTAINERS) -> None:
        self._idle: list[Container] = []
        self._max_idle = max_idle
        self._lock = threading.Lock()

    def run(
        self,
        spec: ContainerSpec,
        *,
        function: bytes,
        arguments: bytes,
        environment: dict[str, str],
        stdout: int,
        stderr: int,
        chunk: Chunk | None = None,
    ) -> ContainerRun:
        """Run one attempt (or a chunk of a map's inputs) in a warm container for ``spec``,
        or a new one."""
        container = self._take(spec) or Container(spec)
        try:
            run = container.run(
                function=function,
                arguments=arguments,
                environment=environment,
                stdout=stdout,
                stderr=stderr,
                chunk=chunk,
            )
        except BaseException:
            container.close()
            raise
        self._give_back(container)
        return run

    def close(self) -> None:
        """Delete every idle container."""
        with self._lock:
            idle, self._idle = self._idle, []
        for container in idle:
            container.close()

    def _take(self, spec: ContainerSpec) -> Container | None:
        with self._lock:
            for container in self._idle:
                if container.spec == spec:
                    self._idle.remove(container)
                    return container
        return None

    def _give_back(self, container: Container) -> None:
        if not container.clean():
            container.close()
            return
        with self._lock:
            self._idle.append(container)
            evicted = self._idle[: -self._max_idle] if len(self._idle) > self._max_idle else []
            self._idle = self._idle[len(evicted) :]
        for old in evicted:
            old.close()


#: The containers of this worker process.
warm_containers = WarmContainers()


def run_sandboxed(
    config: SandboxConfig,
    job: SandboxedJob,
    *,
    function: bytes,
    arguments: bytes,
    stdout: int,
    stderr: int,
    extra_environment: Sequence[tuple[str, str]] = (),
    image: UnpackedImage | None = None,
    python_env: Path | None = None,
    chunk: Chunk | None = None,
) -> ContainerRun:
    """Run the function on the inputs (``chunk``: on each input of a chunk of a map) in a
    container of ``job``'s owner, in ``image`` (else the node's default image) with the pip
    environment ``python_env``; a warm one when this process has one."""
    return warm_containers.run(
        container_spec(config, job, image, python_env),
        function=function,
        arguments=arguments,
        environment=dict(extra_environment),
        stdout=stdout,
        stderr=stderr,
        chunk=chunk,
    )
