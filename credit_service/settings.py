"""credit_service settings: every ``ServiceSettings`` field, read with the ``CREDITS_`` prefix.

``CREDITS_HOST``, ``CREDITS_PORT`` (8400), ``CREDITS_DATABASE_URL`` (unset: the embedded
PostgreSQL, database ``credits``), ``CREDITS_DATABASE_POOL_SIZE``,
``CREDITS_DATABASE_MAX_OVERFLOW``, ``CREDITS_RUN_MIGRATIONS``, plus the deployment-wide
``GRIDWEAVE_SERVICE_TOKEN`` (with ``GRIDWEAVE_CREDENTIALS``) and ``GRIDWEAVE_STATE_DIR``.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from gridweave_runtime.settings import ServiceSettings

__all__ = ["DATABASE_NAME", "CreditSettings"]

DATABASE_NAME = "credits"


class CreditSettings(ServiceSettings):
    """Settings of credit_service (prefix ``CREDITS_``)."""

    model_config = SettingsConfigDict(env_prefix="CREDITS_")

    port: int = Field(default=8400, ge=1, le=65535, description="TCP port of the HTTP server.")
