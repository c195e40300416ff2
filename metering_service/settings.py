"""metering_service settings: every ``ServiceSettings`` field with the ``METERING_`` prefix.

``METERING_HOST``, ``METERING_PORT`` (8300), ``METERING_DATABASE_URL`` (unset: the embedded
PostgreSQL, database ``metering``), ``METERING_DATABASE_POOL_SIZE``,
``METERING_DATABASE_MAX_OVERFLOW``, ``METERING_RUN_MIGRATIONS``, ``METERING_PRICE_TABLE``
(JSON), ``METERING_CREDIT_TIMEOUT_SECONDS``, ``METERING_CREDIT_ATTEMPTS``,
``METERING_CREDIT_CONNECTIONS``, the receipt
deliverer's ``METERING_RECEIPT_*`` (``python -m metering_service.deliverer`` reads these
same settings), plus the deployment-wide ``CREDIT_SERVICE_URL``,
``CHAIN_SERVICE_URL``, ``GRIDWEAVE_SERVICE_TOKEN``, ``GRIDWEAVE_CREDENTIALS`` and
``GRIDWEAVE_STATE_DIR``.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE, PriceTable
from gridweave_runtime.settings import CreditCallerSettings

__all__ = ["DATABASE_NAME", "MeteringSettings"]

DATABASE_NAME = "metering"


class MeteringSettings(CreditCallerSettings):
    """Settings of metering_service (prefix ``METERING_``)."""

    model_config = SettingsConfigDict(env_prefix="METERING_")

    port: int = Field(default=8300, ge=1, le=65535, description="TCP port of the HTTP server.")
    price_table: PriceTable = Field(
        default=DEFAULT_PRICE_TABLE,
        description=(
            "METERING_PRICE_TABLE: JSON object vendor (nvidia, amd) -> list of tiers "
            '{"max_vram_mb": int | null, "micro_credits_per_gpu_second": int} in ascending '
            "max_vram_mb (null = no limit, last tier only). Replaces the default table whole; "
            "see gridweave_clients/metering/pricing.py. The platform and the gateway read "
            "it from metering (GET /v1/prices): set it here only."
        ),
    )
    credit_connections: int = Field(
        default=8,
        ge=1,
        le=256,
        description=(
            "Connections to credit_service per process and client, kept open between calls, "
            "and the database connections of first usage reports (each holds one through "
            "its credit call). Few is faster: httpx looks at every idle connection of its "
            "pool on each call, and settlements are CPU-bound in credit_service long before "
            "8 are in flight."
        ),
    )
    gateway_url: str = Field(
        default="http://127.0.0.1:8200",
        validation_alias=AliasChoices("GATEWAY_URL"),
        description=(
            "GATEWAY_URL: base URL of job_gateway, where the hold sweeper reads the job of "
            "each open job hold."
        ),
    )
    gateway_timeout_seconds: float = Field(
        default=10.0, gt=0, le=300, description="Timeout of one call to job_gateway, seconds."
    )
    hold_sweep_seconds: float = Field(
        default=60.0,
        ge=0,
        le=86_400,
        description=(
            "How often the holds no settlement will close are looked for, seconds: a job's "
            "that ended before it held a GPU, one of a job the gateway never created (a "
            "failed release is tried again each time); 0: never."
        ),
    )
    hold_grace_seconds: float = Field(
        default=600.0,
        ge=0,
        le=86_400,
        description=(
            "How long a job hold stays open before the hold sweeper reads its job, seconds: "
            "the job's own usage report closes it in that time, and a submission holds "
            "before it creates its job. Past it, a hold whose job ended without a GPU, or "
            "that the gateway does not know, is released."
        ),
    )
    chain_service_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("CHAIN_SERVICE_URL"),
        description=(
            "CHAIN_SERVICE_URL: base URL of chain_service, where the receipt deliverer "
            "(python -m metering_service.deliverer, a process beside the API) sends the "
            "receipts; the API itself only queues them. No deliverer running: receipts stay "
            "queued in the outbox (none is lost)."
        ),
    )
    receipt_poll_seconds: float = Field(
        default=2.0,
        gt=0,
        le=3600,
        description=(
            "How often the deliverer looks for due receipts (the receipts queued meanwhile go "
            "in one call; a full round is followed by the next at once). Each round costs the "
            "deliverer a fixed few ms of CPU, so longer polls make rounds larger and the "
            "receipt cheaper; receipts are sealed every CHAIN_BATCH_INTERVAL_SECONDS anyway."
        ),
    )
    receipt_batch_size: int = Field(
        default=500,
        ge=1,
        le=1000,  # chain_service's most receipts per call
        description="Receipts claimed per round of the deliverer (sent in one call).",
    )
    receipt_niceness: int = Field(
        default=10,
        ge=0,
        le=19,
        description=(
            "The deliverer's CPU niceness, set at its start (0: left as started): the chain is "
            "asynchronous, so under CPU contention the settling requests go first and the "
            "outbox holds the receipts until the deliverer catches up."
        ),
    )
    receipt_timeout_seconds: float = Field(
        default=5.0, gt=0, le=120, description="Timeout of one call to chain_service."
    )
    receipt_retry_seconds: float = Field(
        default=1.0,
        gt=0,
        le=3600,
        description="Wait before a failed delivery is tried again, doubled per attempt.",
    )
    receipt_max_retry_seconds: float = Field(
        default=60.0, gt=0, le=86_400, description="The longest wait between two attempts."
    )
