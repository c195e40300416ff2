"""job_gateway settings: every ``ServiceSettings`` field with the ``GATEWAY_`` prefix, and its own.

``GATEWAY_HOST``, ``GATEWAY_PORT`` (8200), ``GATEWAY_CRD_TRANSPORT`` (``proxied`` through
kuberay-service at ``KUBERAY_URL``, or ``direct`` to the cluster of ``GATEWAY_KUBECONFIG`` in
``GATEWAY_NAMESPACE``), ``RAY_ADDRESS`` (unset: a local Ray the gateway starts),
``GATEWAY_STORAGE_DIR`` or ``S3_ENDPOINT`` / ``S3_ACCESS_KEY`` / ``S3_SECRET_KEY`` /
``S3_BUCKET``, ``METERING_SERVICE_URL``, the scheduler's ``GATEWAY_SCHEDULING_POLICY``,
``GATEWAY_AGING_SECONDS``, ``GATEWAY_PASS_INTERVAL_SECONDS``, the node-loss
``GATEWAY_NODE_LOST_GRACE_SECONDS``, the usage reports'
``GATEWAY_USAGE_REPORT_CONCURRENCY``, ``GATEWAY_USAGE_REPORT_TIMEOUT_SECONDS``,
``GATEWAY_USAGE_RETRY_MAX_SECONDS``, the endpoint billing's ``ENDPOINT_BILLING_SECONDS``
and ``GATEWAY_ENDPOINT_BILLING_INTERVAL_SECONDS`` (its prices are metering's table, read
from metering), the job images' ``GATEWAY_PLATFORM_URL``, ``GATEWAY_REGISTRY_ADDRESS``
and ``GATEWAY_REGISTRY_TLS``, plus the inventory's
``GATEWAY_INVENTORY_*`` (:class:`job_gateway.inventory.InventorySettings`) and the
deployment-wide ``GRIDWEAVE_SERVICE_TOKEN``, ``GRIDWEAVE_CREDENTIALS``, ``GRIDWEAVE_SERVE_KEY``
and ``GRIDWEAVE_STATE_DIR``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from gridweave_runtime.settings import ServeKeySettings
from gridweave_runtime.storage import ObjectStorageSettings
from job_gateway.scheduler import DEFAULT_AGING_S, Policy

__all__ = ["CrdTransport", "GatewaySettings"]

CrdTransport = Literal["proxied", "direct"]


class GatewaySettings(ObjectStorageSettings, ServeKeySettings):
    """Settings of job_gateway (prefix ``GATEWAY_``)."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_")

    port: int = Field(default=8200, ge=1, le=65535, description="TCP port of the HTTP server.")
    crd_transport: CrdTransport = Field(
        default="proxied",
        description=(
            "proxied: the CRDs through kuberay-service's /v1/crd at KUBERAY_URL (the gateway "
            "needs no cluster access); direct: the Kubernetes API itself."
        ),
    )
    kuberay_url: str = Field(
        default="http://127.0.0.1:8800",
        validation_alias=AliasChoices("KUBERAY_URL"),
        description="KUBERAY_URL: base URL of kuberay-service (the proxied transport).",
    )
    kubeconfig: Path | None = Field(
        default=None,
        description=(
            "The direct transport's kubeconfig; unset: in-cluster config, else KUBECONFIG "
            "or ~/.kube/config."
        ),
    )
    namespace: str | None = Field(
        default=None,
        description="The direct transport's namespace; unset: KUBERAY_NAMESPACE, else gridweave.",
    )
    ray_address: str | None = Field(
        default=None,
        validation_alias=AliasChoices("RAY_ADDRESS"),
        description="RAY_ADDRESS: a Ray cluster to run jobs on; unset: a local Ray started here.",
    )
    metering_service_url: str = Field(
        default="http://127.0.0.1:8300",
        validation_alias=AliasChoices("METERING_SERVICE_URL"),
        description="METERING_SERVICE_URL: where finished jobs' usage is reported.",
    )
    platform_url: str = Field(
        default="http://127.0.0.1:8100",
        validation_alias=AliasChoices("GATEWAY_PLATFORM_URL", "PLATFORM_URL"),
        description=(
            "GATEWAY_PLATFORM_URL or PLATFORM_URL: the platform, which signs the registry "
            "token a node pulls a job's own image with (its owner's rights)."
        ),
    )
    registry_address: str = Field(
        default="localhost:30500",
        pattern=r"^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$",
        description=(
            "The image registry as the nodes reach it (host:port): where a job's own image "
            "(image=) is pulled from."
        ),
    )
    registry_tls: bool = Field(
        default=False,
        description=(
            "Pull from the registry over HTTPS (false: plain HTTP, a registry on the node or "
            "inside the cluster's VPN)."
        ),
    )
    scheduling_policy: Policy = Field(
        default="fgd",
        description=(
            "fgd (least growth of fragmentation), binpack (tightest GPUs that fit) or spread."
        ),
    )
    aging_seconds: float = Field(
        default=DEFAULT_AGING_S,
        ge=0,
        description="A job waiting this long gets a reservation instead of being overtaken.",
    )
    pass_interval_seconds: float = Field(
        default=5.0,
        gt=0,
        le=3600,
        description=(
            "A scheduling pass runs on every change of the jobs and at least this often "
            "(aging and reservations need time to pass)."
        ),
    )
    max_parallel_writes: int = Field(
        default=32,
        ge=1,
        le=1024,
        description="Status writes (Allocated, Running ...) in flight at once.",
    )
    inventory_refresh_seconds: float = Field(
        default=30.0, gt=0, le=86400, description="How often the GPU inventory is read again."
    )
    node_lost_grace_seconds: float = Field(
        default=60.0,
        ge=0,
        le=86400,
        description=(
            "A node gone from the inventory or NotReady this long (by the gateway's reads) "
            "has its Allocated and Running jobs requeued, reason NodeLost."
        ),
    )
    usage_report_concurrency: int = Field(
        default=8, ge=1, le=256, description="Usage reports to metering in flight at once."
    )
    usage_report_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="One usage report (metering's record and the job's mark) may take this long.",
    )
    usage_retry_max_seconds: float = Field(
        default=60.0,
        gt=0,
        le=86400,
        description="A failed usage report is tried again after a backoff doubling up to this.",
    )
    endpoint_billing_seconds: int = Field(
        default=60,
        ge=1,
        le=86_400,
        validation_alias=AliasChoices("ENDPOINT_BILLING_SECONDS"),
        description=(
            "ENDPOINT_BILLING_SECONDS: an endpoint's billing period, held and settled one at "
            "a time (the platform's deploy check reads the same variable)."
        ),
    )
    endpoint_billing_interval_seconds: float = Field(
        default=5.0,
        ge=0,
        le=3600,
        description=(
            "How often the endpoints' period holds are renewed and their ended billing "
            "periods reported to metering, seconds; 0: this gateway bills no endpoint."
        ),
    )
