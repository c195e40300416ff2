"""The executor's settings (``GATEWAY_`` prefix): whether jobs run, and the local Ray head's size.

``RAY_ADDRESS`` is the gateway's own setting (:class:`job_gateway.settings.GatewaySettings`):
set, the gateway connects to that Ray; unset, it starts (or finds) a local head on
``GATEWAY_RAY_PORT`` with its temporary directory under ``GRIDWEAVE_STATE_DIR``.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address

from pydantic import Field, IPvAnyAddress, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from job_gateway.sandbox.settings import SandboxSettings

__all__ = ["ExecutionSettings", "WarmSettings"]


@dataclass(frozen=True, slots=True)
class WarmSettings:
    """Idle workers per node: ``spares`` started ahead, ``max_idle`` in all, and how long
    one waits for an attempt before it exits."""

    spares: int
    max_idle: int
    idle_seconds: float


class ExecutionSettings(BaseSettings):
    """``GATEWAY_EXECUTE_JOBS``, ``GATEWAY_RAY_*``, ``GATEWAY_WORKER_*``,
    ``GATEWAY_WARM_SPARES_PER_NODE``, ``GATEWAY_MAX_IDLE_WORKERS_PER_NODE``,
    ``GATEWAY_EXECUTOR_*``, and the sandbox's ``GATEWAY_SANDBOX_*``."""

    @property
    def warm(self) -> WarmSettings:
        """The warm workers' settings as the executor takes them."""
        return WarmSettings(
            spares=self.warm_spares_per_node,
            max_idle=self.max_idle_workers_per_node,
            idle_seconds=self.worker_idle_seconds,
        )

    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore", frozen=True)

    sandbox: SandboxSettings = Field(
        default_factory=SandboxSettings,
        description="The job sandbox (GATEWAY_SANDBOX_*: the OCI runtime, image, limits).",
    )

    execute_jobs: bool = Field(
        default=True,
        description=(
            "Run Allocated jobs on Ray. false: the gateway places jobs but runs nothing "
            "(another gateway, or a test, runs them)."
        ),
    )
    ray_port: int = Field(
        default=6380,
        ge=1,
        le=65535,
        description=(
            "GCS port of the local Ray head (no RAY_ADDRESS): a restarted gateway finds the "
            "head still running there. Not Ray's default 6379, so a user's own Ray is not "
            "taken for the gateway's."
        ),
    )
    ray_node_ip: IPvAnyAddress = Field(
        default=IPv4Address("127.0.0.1"),
        description=(
            "The address the local Ray head listens on and gives its peers (no RAY_ADDRESS): "
            "loopback on one machine; the master's mesh address (KUBERAY_MASTER_VPN_IP) when "
            "joined nodes' Ray workers join the head over WireGuard."
        ),
    )
    ray_num_cpus: int = Field(
        default=2, ge=1, le=4096, description="CPUs the local Ray head declares."
    )
    ray_object_store_mb: int = Field(
        default=200,
        ge=80,
        le=1_048_576,
        description=(
            "The local head's object store (MiB): small, since results travel through the "
            "object storage, never through Ray."
        ),
    )
    worker_start_timeout_seconds: float = Field(
        default=300.0,
        gt=0,
        le=86400,
        description=(
            "An Allocated job whose worker has not started this long after allocatedAt is "
            "requeued (WorkerNotStarted): no Ray node serves its Gridweave node, or Ray is full."
        ),
    )
    warm_spares_per_node: int = Field(
        default=2,
        ge=0,
        le=64,
        description=(
            "Workers kept started ahead on each ready node, so a job starts without waiting "
            "for a Ray worker process (most of a second). A spare serves one user only."
        ),
    )
    max_idle_workers_per_node: int = Field(
        default=16,
        ge=0,
        le=1024,
        description=(
            "Idle workers kept per node in all: spares, and workers whose attempt ended, "
            "kept for the same user's next attempt on the same GPUs; more than "
            "GATEWAY_WARM_SPARES_PER_NODE. 0: no warm workers, a worker is started for each "
            "attempt and stopped after it."
        ),
    )
    worker_idle_seconds: float = Field(
        default=60.0,
        ge=10,
        le=86400,
        description="An idle worker exits after this long without an attempt.",
    )
    executor_poll_seconds: float = Field(
        default=0.02,
        gt=0,
        le=60,
        description=(
            "The longest the executor waits between two looks at its jobs (checks timeouts); "
            "a run that ends is settled at once."
        ),
    )

    @model_validator(mode="after")
    def _room_for_a_released_worker(self) -> ExecutionSettings:
        # with no room past the spares, every ended attempt's worker would be killed and
        # every attempt would take a fresh spare while a new one starts: never warm
        if 0 < self.max_idle_workers_per_node <= self.warm_spares_per_node:
            raise ValueError(
                "max_idle_workers_per_node must be 0 (no warm workers) or more than "
                f"warm_spares_per_node ({self.warm_spares_per_node}), so that a worker whose "
                "attempt ended has room to stay warm"
            )
        return self
