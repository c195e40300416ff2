"""The job sandbox's plain data: what a worker takes to run an attempt on its node.

:class:`SandboxConfig` (and the :class:`PipConfig` in it) travels with every attempt to the
worker: plain dataclasses, so a Ray worker loads neither pydantic-settings nor the
gateway's settings to run one (:mod:`job_gateway.sandbox.settings` reads them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gridweave_runtime.job_images import SYSTEM_CACHE
from job_gateway.sandbox.network import Egress

__all__ = ["CA_BUNDLE", "DRIVER_SEARCH", "JobNetwork", "PipConfig", "Runtime", "SandboxConfig"]

Runtime = Literal["runc", "crun", "none"]
#: A job container's network: ``none`` (only a loopback of its own), ``egress`` (the
#: internet, never the node or its networks).
JobNetwork = Literal["none", "egress"]
#: Debian's CA bundle: what a node's pip trusts unless it was told otherwise.
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
#: Where a node's NVIDIA driver installs its libraries and nvidia-smi (Debian and Ubuntu's
#: multiarch directories, then the RPM distributions' and the .run installer's).
DRIVER_SEARCH = (
    Path("/usr/lib/x86_64-linux-gnu"),
    Path("/usr/lib/aarch64-linux-gnu"),
    Path("/usr/lib64"),
    Path("/usr/lib"),
    Path("/usr/bin"),
)


@dataclass(frozen=True, slots=True)
class PipConfig:
    """How a node builds its jobs' pip environments: where they are kept and how much, how
    pip reaches the index (its URL, find-links, the CA bundle it trusts, its per-request
    timeout), and a build's limits (seconds, memory MiB)."""

    directory: Path = SYSTEM_CACHE / "pip"
    cache_gb: float = 20.0
    index_url: str | None = None
    find_links: str | None = None
    ca_bundle: Path | None = CA_BUNDLE
    request_timeout_seconds: float = 15.0
    build_seconds: int = 1800
    memory_mb: int = 4096


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
    #: Where the node's NVIDIA driver files are looked for (:mod:`job_gateway.sandbox.driver`).
    driver_search: tuple[Path, ...] = DRIVER_SEARCH
    image_dir: Path = SYSTEM_CACHE / "images"
    image_cache_gb: float = 50.0
    job_network: JobNetwork = "none"
    #: The node's way out for containers that have one (egress jobs, pip builds).
    egress: Egress = Egress()
    pip: PipConfig = PipConfig()

    @property
    def job_egress(self) -> Egress | None:
        """A job container's way out; None: only its loopback."""
        return self.egress if self.job_network == "egress" else None
