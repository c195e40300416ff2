"""The executor's settings (``GATEWAY_`` prefix): whether jobs run, and the local Ray head's size.

``RAY_ADDRESS`` is the gateway's own setting (:class:`job_gateway.settings.GatewaySettings`):
set, the gateway connects to that Ray; unset, it starts (or finds) a local head on
``GATEWAY_RAY_PORT`` with its temporary directory under ``GRIDWEAVE_STATE_DIR``.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["ExecutionSettings"]


class ExecutionSettings(BaseSettings):
    """``GATEWAY_EXECUTE_JOBS``, ``GATEWAY_RAY_*``, ``GATEWAY_WORKER_*``, ``GATEWAY_EXECUTOR_*``."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore", frozen=True)

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
    executor_poll_seconds: float = Field(
        default=0.2,
        gt=0,
        le=60,
        description="How often the executor asks Ray which runs ended and checks timeouts.",
    )
