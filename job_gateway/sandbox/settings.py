"""The job sandbox's settings (``GATEWAY_SANDBOX_`` prefix), and the plain data a worker takes.

The gateway reads them; :meth:`SandboxSettings.config` turns them into a
:class:`SandboxConfig`, which travels with every attempt to the worker on the job's node.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from gridweave_runtime.job_images import SYSTEM_CACHE, default_rootfs, image_cache

__all__ = ["Runtime", "SandboxConfig", "SandboxSettings"]

Runtime = Literal["runc", "crun", "none"]
#: The sandbox's state lives outside any home directory: a container's uid must be able to
#: pass through every directory above the runner (a home is 0700).
_SYSTEM_STATE = Path("/var/lib/gridweave/sandbox")


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """How a node's worker runs an attempt: the runtime, the image, the default limits."""

    runtime: Runtime
    rootfs: Path
    state_dir: Path
    memory_mb_per_gpu: int
    cpus_per_gpu: float
    pids: int
    scratch_mb: int
    max_result_mb: int
    device_dir: Path
    image_dir: Path = SYSTEM_CACHE / "images"
    image_cache_gb: float = 50.0


class SandboxSettings(BaseSettings):
    """``GATEWAY_SANDBOX_*``: the OCI runtime, the default image, the default limits."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_SANDBOX_", extra="ignore", frozen=True)

    runtime: Runtime = Field(
        default="runc",
        description=(
            "The OCI runtime every job attempt runs under (runc, or crun on a pure cgroup v2 "
            "host). none: the runner runs as a plain child of the worker, with the worker's "
            "user, files and network: for measuring the sandbox's cost only, never for "
            "strangers' code."
        ),
    )
    rootfs: Path = Field(
        default_factory=default_rootfs,
        description=(
            "The default image's root filesystem (make sandbox builds it from Debian's "
            "packages); mounted read-only in every container."
        ),
    )
    state_dir: Path = Field(
        default=_SYSTEM_STATE,
        description=(
            "The node's sandbox state: the runtime's, the containers' bundles, the runner, "
            "and the table of user uids (one per node, shared by every worker on it)."
        ),
    )
    memory_mb_per_gpu: int = Field(
        default=4096,
        ge=64,
        le=4_194_304,
        description=(
            "A job's memory limit (MiB, scratch and swap included) per GPU it asked for; past "
            "it the job fails with OutOfMemory."
        ),
    )
    cpus_per_gpu: float = Field(
        default=2.0, gt=0, le=1024, description="CPU time a job may use per GPU (cores)."
    )
    pids: int = Field(
        default=512, ge=16, le=1_000_000, description="Processes and threads a job may have."
    )
    scratch_mb: int = Field(
        default=1024,
        ge=1,
        le=1_048_576,
        description="Size of a job's writable /scratch and /tmp (MiB each, within its memory).",
    )
    max_result_mb: int = Field(
        default=1024,
        ge=1,
        le=65536,
        description="A larger pickled return value fails the job (MiB).",
    )
    device_dir: Path = Field(
        default=Path("/dev"),
        description="Where the node's GPU device nodes are (nvidiaN, nvidiactl, kfd, dri/).",
    )
    image_dir: Path = Field(
        default_factory=image_cache,
        description=(
            "Where a node keeps the images jobs named (image=), pulled from the platform's "
            "registry and unpacked once per digest."
        ),
    )
    image_cache_gb: float = Field(
        default=50.0,
        gt=0,
        le=1_000_000,
        description=(
            "The image cache's size (GB, 10^9 bytes) past which the least recently used "
            "images no container runs are deleted."
        ),
    )

    def config(self) -> SandboxConfig:
        """The plain data a worker takes."""
        return SandboxConfig(
            runtime=self.runtime,
            rootfs=self.rootfs,
            state_dir=self.state_dir,
            memory_mb_per_gpu=self.memory_mb_per_gpu,
            cpus_per_gpu=self.cpus_per_gpu,
            pids=self.pids,
            scratch_mb=self.scratch_mb,
            max_result_mb=self.max_result_mb,
            device_dir=self.device_dir,
            image_dir=self.image_dir,
            image_cache_gb=self.image_cache_gb,
        )
