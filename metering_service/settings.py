"""metering_service settings: every ``ServiceSettings`` field with the ``METERING_`` prefix.

``METERING_HOST``, ``METERING_PORT`` (8300), ``METERING_DATABASE_URL`` (unset: the embedded
PostgreSQL, database ``metering``), ``METERING_DATABASE_POOL_SIZE``,
``METERING_DATABASE_MAX_OVERFLOW``, ``METERING_RUN_MIGRATIONS``, ``METERING_PRICE_TABLE``
(JSON), ``METERING_CREDIT_TIMEOUT_SECONDS``, ``METERING_CREDIT_ATTEMPTS``, plus the
deployment-wide ``CREDIT_SERVICE_URL``, ``GRIDWEAVE_INTERNAL_TOKEN`` and
``GRIDWEAVE_STATE_DIR``.
"""

from __future__ import annotations

from pydantic import Field
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
            "see gridweave_clients/metering/pricing.py."
        ),
    )
