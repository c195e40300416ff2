"""registry_service settings: every ``ServiceSettings`` field with the ``REGISTRY_`` prefix.

``REGISTRY_HOST``/``REGISTRY_PORT`` are where the registry itself listens (30500);
``REGISTRY_HEALTH_PORT`` is the supervisor's own HTTP server (``/healthz``, ``/metrics``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from gridweave_clients.platform.registry import DEFAULT_REGISTRY_SERVICE
from gridweave_runtime.settings import ServiceSettings

__all__ = ["RegistrySettings"]


class RegistrySettings(ServiceSettings):
    """Settings of registry_service (prefix ``REGISTRY_``)."""

    model_config = SettingsConfigDict(env_prefix="REGISTRY_")

    port: int = Field(
        default=30500, ge=1, le=65535, description="TCP port the image registry listens on."
    )
    health_port: int = Field(
        default=30501,
        ge=1,
        le=65535,
        description="TCP port of the registry supervisor's /healthz, /metrics and collections.",
    )
    binary: Path | None = Field(
        default=None,
        description=(
            "The distribution `registry` binary. Unset: built by tools/registry/build.sh of "
            "the source checkout (cached)."
        ),
    )
    storage_dir: Path | None = Field(
        default=None,
        description="Where the registry keeps images. Unset: <state_dir>/registry/storage.",
    )
    platform_url: str = Field(
        default="http://localhost:8100",
        validation_alias=AliasChoices("REGISTRY_PLATFORM_URL", "PLATFORM_URL"),
        description=(
            "REGISTRY_PLATFORM_URL or PLATFORM_URL: the platform the registry takes its JWK "
            "Set from and sends its events and usage to."
        ),
    )
    token_realm: str | None = Field(
        default=None,
        description=(
            "The token endpoint clients are sent to, as they reach it. Unset: "
            "<platform_url>/v1/registry/token (a name, not a loopback IP: crane refuses those)."
        ),
    )
    service: str = Field(
        default=DEFAULT_REGISTRY_SERVICE,
        min_length=1,
        validation_alias=AliasChoices("REGISTRY_SERVICE"),
        description="REGISTRY_SERVICE: the registry's name in its token challenge.",
    )
    auth: bool = Field(
        default=True,
        description=(
            "Token auth from the platform. false: anyone may push and pull (benchmarks only)."
        ),
    )
    gc_interval_hours: float = Field(
        default=24.0,
        gt=0,
        le=24 * 365,
        validation_alias=AliasChoices("REGISTRY_GC_INTERVAL_HOURS"),
        description=(
            "REGISTRY_GC_INTERVAL_HOURS: how often the registry goes read-only and collects "
            "the blobs no tagged image uses."
        ),
    )
    gc_drain_seconds: float = Field(
        default=300.0,
        ge=0,
        le=3600,
        validation_alias=AliasChoices("REGISTRY_GC_DRAIN_SECONDS"),
        description=(
            "REGISTRY_GC_DRAIN_SECONDS: the longest a collection waits, after the platform "
            "stopped granting pushes, for the push tokens granted before to expire (the "
            "platform says when), so that no push under way is cut off by read-only. 0: no "
            "wait."
        ),
    )
    reconcile_seconds: float = Field(
        default=300.0,
        gt=0,
        le=86_400,
        description="How often each namespace's usage is read from storage for the platform.",
    )
    start_timeout_seconds: float = Field(
        default=30.0, gt=0, le=600, description="Time the registry has to answer after a start."
    )

    def resolved_storage_dir(self) -> Path:
        """Where the images are kept."""
        return self.storage_dir or self.state_dir / "registry" / "storage"

    def resolved_token_realm(self) -> str:
        """The token endpoint named in the registry's challenge."""
        return self.token_realm or f"{self.platform_url.rstrip('/')}/v1/registry/token"
