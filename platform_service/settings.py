"""platform_service settings: every ``ServiceSettings`` field with the ``PLATFORM_`` prefix.

Besides the shared ones (``PLATFORM_HOST``, ``PLATFORM_PORT`` (8100),
``PLATFORM_DATABASE_URL`` (unset: the embedded PostgreSQL, database ``platform``), the
request limits, ``GRIDWEAVE_SERVICE_TOKEN``, ``GRIDWEAVE_CREDENTIALS``, ``GRIDWEAVE_SERVE_KEY``,
``GRIDWEAVE_STATE_DIR``), the object store's
(``PLATFORM_STORAGE_DIR``, ``S3_*``) and the deployment-wide service URLs and price table,
each field below is read from ``PLATFORM_<NAME>``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import SettingsConfigDict

from gridweave_clients.platform.registry import DEFAULT_REGISTRY_SERVICE
from gridweave_runtime.settings import CreditCallerSettings, ServeKeySettings
from gridweave_runtime.storage import ObjectStorageSettings

__all__ = ["DATABASE_NAME", "PlatformSettings"]

DATABASE_NAME = "platform"


class PlatformSettings(CreditCallerSettings, ObjectStorageSettings, ServeKeySettings):
    """Settings of platform_service (prefix ``PLATFORM_``)."""

    model_config = SettingsConfigDict(env_prefix="PLATFORM_")

    port: int = Field(default=8100, ge=1, le=65535, description="TCP port of the HTTP server.")
    api_key_secret: SecretStr | None = Field(
        default=None,
        description=(
            "HMAC-SHA256 key the API keys' secrets are hashed with. Unset: derived from the "
            "platform's GRIDWEAVE_SERVICE_TOKEN. Changing it invalidates every API key issued."
        ),
    )
    api_key_cache_seconds: float = Field(
        default=5.0,
        ge=0,
        le=300,
        description=(
            "How long an accepted API key is accepted again without reading the database, "
            "seconds. A key revoked through another platform process works here that much "
            "longer at most (through this one: never). 0: every request reads it."
        ),
    )
    model_roots: list[str] | None = Field(
        default=None,
        description=(
            "Directories or storage URI prefixes (JSON list) a user's endpoint may load its "
            "model from (model_ref, or model when it names a path); admins may name any. "
            "Unset: <state_dir>/models."
        ),
    )
    max_submission_bytes: int = Field(
        default=64 * 2**20,
        ge=1_024,
        le=2**30,
        description=(
            "Largest job submission body (the base64 of the pickled function and arguments "
            "plus the job's fields), bytes; past it: 413."
        ),
    )
    max_log_bytes: int = Field(
        default=1_048_576,
        ge=1_024,
        le=64 * 2**20,
        description="Most bytes of stdout and of stderr one logs answer carries (the tail).",
    )
    dashboard_proxy_secret: SecretStr | None = Field(
        default=None,
        description=(
            "The dashboard's proxy secret (its WEB_PROXY_SECRET): a request carrying it in "
            "X-Gridweave-Proxy came through the dashboard, and only then is its "
            "X-Forwarded-For believed as the end user's address (the faucet's per-address "
            "limits). Unset: X-Forwarded-For is never believed."
        ),
    )
    session_hours: float = Field(
        default=12,
        gt=0,
        le=24 * 30,
        description="How long a dashboard sign-in lasts (the session cookie), hours.",
    )
    log_poll_seconds: float = Field(
        default=0.5,
        gt=0,
        le=10,
        description="How often a live log stream (server-sent events) reads the job's output.",
    )
    max_log_streams_per_user: int = Field(
        default=8,
        ge=1,
        le=1_000,
        description=(
            "Most live log streams (server-sent events) one user holds open at once, per "
            "platform process; one more is 429 too_many_log_streams."
        ),
    )
    gateway_url: str = Field(
        default="http://127.0.0.1:8200",
        validation_alias=AliasChoices("GATEWAY_URL"),
        description="GATEWAY_URL: base URL of job_gateway.",
    )
    metering_service_url: str = Field(
        default="http://127.0.0.1:8300",
        validation_alias=AliasChoices("METERING_SERVICE_URL"),
        description="METERING_SERVICE_URL: base URL of metering_service (usage).",
    )
    faucet_service_url: str = Field(
        default="http://127.0.0.1:8500",
        validation_alias=AliasChoices("FAUCET_SERVICE_URL"),
        description="FAUCET_SERVICE_URL: base URL of faucet_service (sign-up, refills).",
    )
    chain_service_url: str = Field(
        default="http://127.0.0.1:8600",
        validation_alias=AliasChoices("CHAIN_SERVICE_URL"),
        description="CHAIN_SERVICE_URL: base URL of chain_service (the jobs' receipts).",
    )
    kuberay_url: str = Field(
        default="http://127.0.0.1:8800",
        validation_alias=AliasChoices("KUBERAY_URL"),
        description="KUBERAY_URL: base URL of kuberay-service (join keys, cordoned nodes).",
    )
    node_join_url: str | None = Field(
        default=None,
        description=(
            "The kuberay-service URL a joining machine reaches, written into the join command "
            "(join-node.sh --master). Unset: KUBERAY_URL."
        ),
    )
    prometheus_url: str | None = Field(
        default=None,
        description=(
            "The Prometheus that scrapes every service's /metrics (gridweave up starts one and "
            "sets this): the admin console's charts are its queries. Unset: the console shows "
            "no charts (503 metrics_unavailable)."
        ),
    )
    downstream_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=120,
        description="Timeout of one call to the gateway, metering, the faucet or chain_service.",
    )
    endpoint_billing_seconds: int = Field(
        default=60,
        ge=1,
        le=86_400,
        validation_alias=AliasChoices("ENDPOINT_BILLING_SECONDS"),
        description=(
            "ENDPOINT_BILLING_SECONDS: an endpoint's billing period (the gateway bills by the "
            "same variable); a deployment needs the credits of two periods at its max replicas."
        ),
    )
    shares_sync_seconds: float = Field(
        default=30.0,
        ge=0,
        le=86_400,
        description=(
            "How often the users' fair-share weights are pushed to the gateway, seconds "
            "(also after every change): a restarted gateway has them again within this; "
            "0: only on a change."
        ),
    )
    endpoint_wake_seconds: float = Field(
        default=180.0,
        gt=0,
        le=600,
        description="Longest a call waits for a scaled-to-zero endpoint to start, seconds.",
    )
    endpoint_read_timeout_seconds: float = Field(
        default=600.0,
        gt=0,
        le=3600,
        description="Longest an endpoint may go silent while answering a call, seconds.",
    )
    registry_quota_gb: float = Field(
        default=10.0,
        ge=0,
        le=1_000_000,
        validation_alias=AliasChoices("REGISTRY_QUOTA_GB"),
        description=(
            "REGISTRY_QUOTA_GB: each user's image-registry quota, GB (10^9 bytes), unless an "
            "admin set another (gridweave admin registry-quota); over it, pushes are refused."
        ),
    )
    registry_service: str = Field(
        default=DEFAULT_REGISTRY_SERVICE,
        min_length=1,
        validation_alias=AliasChoices("REGISTRY_SERVICE"),
        description=(
            "REGISTRY_SERVICE: the registry's name in its token challenge and the tokens' "
            "audience; the registry (registry_service) must be given the same."
        ),
    )
    registry_public_namespace: str = Field(
        default="gridweave",
        pattern=r"^([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)?$",
        validation_alias=AliasChoices("REGISTRY_PUBLIC_NAMESPACE"),
        description=(
            "REGISTRY_PUBLIC_NAMESPACE: the registry namespace anyone may pull from, without "
            "credentials (Gridweave's own images: gridweave/ray-worker, which join-node.sh "
            "pulls); only admins push there. Empty: none."
        ),
    )
    registry_token_key_file: Path | None = Field(
        default=None,
        description=(
            "PEM file of the ES256 key the registry tokens are signed with (created 0600 when "
            "missing). Unset: <state_dir>/registry-token/key.pem."
        ),
    )
    registry_url: str = Field(
        default="http://localhost:30500",
        description=(
            "The image registry's API as the platform reaches it: a job's image is checked "
            "there and pinned to its digest when the job is submitted."
        ),
    )
    registry_token_seconds: int = Field(
        default=300, ge=30, le=86_400, description="Lifetime of a registry token, seconds."
    )

    def resolved_model_roots(self) -> tuple[str, ...]:
        """Where a user's endpoint may load its model from."""
        if self.model_roots is not None:
            return tuple(self.model_roots)
        return (str(self.state_dir / "models"),)
