"""faucet_service settings: every ``ServiceSettings`` field with the ``FAUCET_`` prefix.

Besides the shared ones (``FAUCET_HOST``, ``FAUCET_PORT`` (8500), ``FAUCET_DATABASE_URL``
(unset: the embedded PostgreSQL, database ``faucet``), ``FAUCET_DATABASE_POOL_SIZE``,
``FAUCET_DATABASE_MAX_OVERFLOW``, ``FAUCET_RUN_MIGRATIONS``, ``GRIDWEAVE_SERVICE_TOKEN``,
``GRIDWEAVE_CREDENTIALS``, ``GRIDWEAVE_STATE_DIR``) and ``CREDIT_SERVICE_URL``, each field
below is read from ``FAUCET_<NAME>``. Amounts are integer micro-credits (1 credit = 1,000,000).
"""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from gridweave_runtime.settings import CreditCallerSettings

__all__ = ["DATABASE_NAME", "FaucetSettings"]

DATABASE_NAME = "faucet"


class FaucetSettings(CreditCallerSettings):
    """Settings of faucet_service (prefix ``FAUCET_``)."""

    model_config = SettingsConfigDict(env_prefix="FAUCET_")

    port: int = Field(default=8500, ge=1, le=65535, description="TCP port of the HTTP server.")
    code_secret: SecretStr | None = Field(
        default=None,
        description=(
            "HMAC-SHA256 key the verification codes are hashed with. Unset: derived from the "
            "faucet's GRIDWEAVE_SERVICE_TOKEN. Changing it invalidates the codes already sent."
        ),
    )
    code_ttl_seconds: int = Field(
        default=900, ge=60, le=86_400, description="How long a verification code is valid."
    )
    code_max_attempts: int = Field(
        default=5, ge=1, le=20, description="Wrong codes allowed before the code is locked."
    )
    onboarding_grant: int = Field(
        default=10_000_000,
        gt=0,
        le=10**12,
        description="Micro-credits granted once per verified email (10 credits by default).",
    )
    refill_threshold: int = Field(
        default=1_000_000,
        gt=0,
        le=10**12,
        description="A refill is given only while the balance is below this (micro-credits).",
    )
    refill_amount: int = Field(
        default=5_000_000, gt=0, le=10**12, description="Micro-credits one refill adds."
    )
    refill_period_seconds: int = Field(
        default=86_400, ge=1, description="Least time between two refills of one user."
    )
    rate_limit_window_seconds: int = Field(
        default=3_600, ge=1, description="The sliding window the rate limits count in."
    )
    signups_per_email: int = Field(
        default=5, ge=1, description="Sign-ups (codes sent) allowed per email per window."
    )
    requests_per_address: int = Field(
        default=30,
        ge=1,
        description="Sign-ups, verifications and refills allowed per client address per window.",
    )
    smtp_host: str | None = Field(
        default=None,
        description="SMTP server for verification emails. Unset: codes go to the outbox table.",
    )
    smtp_port: int = Field(default=587, ge=1, le=65535, description="SMTP server port.")
    smtp_username: str | None = Field(default=None, description="SMTP login, if it needs one.")
    smtp_password: SecretStr | None = Field(default=None, description="SMTP password.")
    smtp_starttls: bool = Field(default=True, description="Upgrade the SMTP link with STARTTLS.")
    smtp_from: str = Field(
        default="Gridweave <no-reply@gridweave.local>", description="From: of the emails sent."
    )
    smtp_timeout_seconds: float = Field(
        default=10.0, gt=0, le=120, description="Timeout of each step of one SMTP attempt."
    )
    smtp_max_attempts: int = Field(
        default=5, ge=1, le=50, description="Attempts to send one email before it is failed."
    )
    smtp_retry_seconds: float = Field(
        default=10.0,
        gt=0,
        le=3_600,
        description="Wait before retrying a failed send, doubled after each attempt.",
    )
    smtp_poll_seconds: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="How often the sender looks for due emails (a sign-up wakes it at once).",
    )
