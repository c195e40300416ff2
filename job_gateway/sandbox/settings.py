"""The job sandbox's settings (``GATEWAY_SANDBOX_`` prefix), and the plain data a worker takes.

The gateway reads them; :meth:`SandboxSettings.config` turns them into a
:class:`SandboxConfig`, which travels with every attempt to the worker on the job's node.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gridweave_runtime.job_images import default_rootfs, image_cache, pip_cache
from job_gateway.sandbox.config import (
    CA_BUNDLE,
    DRIVER_SEARCH,
    JobNetwork,
    PipConfig,
    Runtime,
    SandboxConfig,
)
from job_gateway.sandbox.network import DEFAULT_POOL, Egress

__all__ = ["JobNetwork", "PipConfig", "Runtime", "SandboxConfig", "SandboxSettings"]

#: The sandbox's state lives outside any home directory: a container's uid must be able to
#: pass through every directory above the runner (a home is 0700).
_SYSTEM_STATE = Path("/var/lib/gridweave/sandbox")


def driver_search() -> list[Path]:
    """Where a node's NVIDIA driver files are looked for by default (``DRIVER_SEARCH``)."""
    return list(DRIVER_SEARCH)


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
    driver_dirs: list[Path] = Field(
        default_factory=driver_search,
        description=(
            "Where the node's NVIDIA driver libraries (libcuda.so.1, libnvidia-ml.so.1...) "
            "and nvidia-smi are looked for, in order (JSON list); a container given NVIDIA "
            "GPUs gets them read-only at /opt/gridweave/driver."
        ),
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

    job_network: JobNetwork = Field(
        default="none",
        validation_alias=AliasChoices("GATEWAY_JOB_NETWORK"),
        description=(
            "A job container's network. none: only a loopback of its own. egress: the "
            "internet through a network namespace of its own (a veth pair, NAT), never the "
            "node's own addresses, the private, loopback, link-local or CGNAT ranges, the "
            "node's subnets or GATEWAY_SANDBOX_EGRESS_BLOCKED; DNS to the node's resolvers "
            "only. pip= builds always have egress."
        ),
    )
    egress_pool: IPv4Network = Field(
        default=IPv4Network(DEFAULT_POOL),
        description=(
            "The private range the containers' veth pairs take a /30 each of (egress jobs and "
            "pip builds); it must be used by nothing else on the node."
        ),
    )
    egress_blocked: list[IPv4Network] = Field(
        default=[],
        description=(
            "Ranges (JSON list) a container with egress never reaches besides the private, "
            "loopback, link-local, CGNAT, multicast and reserved ones and the node's own "
            "subnets: the cluster's LAN or mesh where they are public addresses."
        ),
    )
    egress_dns: list[IPv4Address] = Field(
        default=[],
        description=(
            "The DNS resolvers (JSON list) of containers with egress, the only addresses in "
            "a refused range they reach (port 53). Empty: the node's own (/etc/resolv.conf; a "
            "loopback stub replaced by systemd-resolved's upstreams)."
        ),
    )

    pip_dir: Path = Field(
        default_factory=pip_cache,
        description=(
            "Where a node keeps the jobs' pip= environments, one per image, Python and list "
            "of requirements, each built once."
        ),
    )
    pip_cache_gb: float = Field(
        default=20.0,
        gt=0,
        le=1_000_000,
        description=(
            "The pip environments' size (GB) past which the least recently used ones no "
            "container runs are deleted."
        ),
    )
    pip_index_url: str | None = Field(
        default=None,
        max_length=2048,
        validation_alias=AliasChoices("GATEWAY_SANDBOX_PIP_INDEX_URL", "PIP_INDEX_URL"),
        description=(
            "The index pip= builds install from (the node's own PIP_INDEX_URL when set). "
            "Unset: pip's default, PyPI."
        ),
    )
    pip_find_links: str | None = Field(
        default=None,
        max_length=2048,
        validation_alias=AliasChoices("GATEWAY_SANDBOX_PIP_FIND_LINKS", "PIP_FIND_LINKS"),
        description=(
            "pip's --find-links for pip= builds (the node's own PIP_FIND_LINKS when set): a "
            "URL, or a directory of the node mounted read-only into the build."
        ),
    )
    pip_ca_bundle: Path | None = Field(
        default=CA_BUNDLE,
        validation_alias=AliasChoices("GATEWAY_SANDBOX_PIP_CA_BUNDLE", "PIP_CERT"),
        description=(
            "The CA bundle pip= builds trust (the node's own PIP_CERT when set), mounted "
            "read-only into the build; a path that does not exist: the image's own."
        ),
    )
    pip_timeout_seconds: float = Field(
        default=15.0,
        gt=0,
        le=3600,
        validation_alias=AliasChoices("GATEWAY_SANDBOX_PIP_TIMEOUT_SECONDS", "PIP_DEFAULT_TIMEOUT"),
        description=(
            "pip's timeout per request in pip= builds (the node's own PIP_DEFAULT_TIMEOUT when "
            "set), seconds."
        ),
    )
    pip_build_seconds: int = Field(
        default=1800,
        ge=10,
        le=86_400,
        description="The longest a pip= build may take; past it the job fails PipInstallFailed.",
    )
    pip_build_memory_mb: int = Field(
        default=4096,
        ge=256,
        le=4_194_304,
        description=(
            "A pip= build's memory limit (MiB), half of it its /scratch and /tmp (pip's "
            "downloads and unpacked sources)."
        ),
    )

    @field_validator("egress_pool")
    @classmethod
    def _a_private_pool(cls, pool: IPv4Network) -> IPv4Network:
        if not pool.is_private or pool.prefixlen > 30:
            raise ValueError(f"{pool} must be a private range of at least a /30")
        return pool

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
            driver_search=tuple(self.driver_dirs),
            image_dir=self.image_dir,
            image_cache_gb=self.image_cache_gb,
            job_network=self.job_network,
            egress=Egress(
                pool=str(self.egress_pool),
                blocked=tuple(str(cidr) for cidr in self.egress_blocked),
                dns=tuple(str(address) for address in self.egress_dns),
            ),
            pip=PipConfig(
                directory=self.pip_dir,
                cache_gb=self.pip_cache_gb,
                index_url=self.pip_index_url,
                find_links=self.pip_find_links,
                ca_bundle=self.pip_ca_bundle,
                request_timeout_seconds=self.pip_timeout_seconds,
                build_seconds=self.pip_build_seconds,
                memory_mb=self.pip_build_memory_mb,
            ),
        )
