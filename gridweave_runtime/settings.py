"""Settings shared by every Gridweave service, read from the environment.

Each service subclasses :class:`ServiceSettings` and sets its own ``env_prefix``
(``CREDITS_``, ``METERING_``, ``FAUCET_`` ...), so ``CREDITS_DATABASE_URL`` and
``METERING_DATABASE_URL`` can point at different servers. A few settings are shared by the
whole deployment and keep their ``GRIDWEAVE_`` names whatever the prefix.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from gridweave_runtime.serve_key import serve_key

__all__ = ["CreditCallerSettings", "ServeKeySettings", "ServiceSettings", "default_state_dir"]


def default_state_dir() -> Path:
    """The directory where the embedded servers keep their data: ``~/.gridweave``."""
    return Path.home() / ".gridweave"


class ServiceSettings(BaseSettings):
    """What every Gridweave service is configured with; subclass it per service."""

    model_config = SettingsConfigDict(
        env_prefix="GRIDWEAVE_", extra="ignore", frozen=True, validate_by_name=True
    )

    host: str = Field(default="127.0.0.1", description="Address the HTTP server binds to.")
    port: int = Field(default=8000, ge=1, le=65535, description="TCP port of the HTTP server.")
    database_url: str | None = Field(
        default=None,
        description=(
            "SQLAlchemy URL of this service's database, e.g. "
            "postgresql+psycopg://user:pass@db:5432/credits. Unset: the embedded PostgreSQL "
            "under the state directory, database named after the service."
        ),
    )
    database_pool_size: int = Field(
        default=20, ge=1, le=200, description="Connections kept open in the pool."
    )
    database_max_overflow: int = Field(
        default=20, ge=0, le=200, description="Extra connections opened under load."
    )
    worker_threads: int = Field(
        default=8,
        ge=1,
        le=400,
        description=(
            "Threads per process that run blocking (database) route handlers. Few is faster: "
            "the handlers mostly wait on PostgreSQL, and more threads only contend for the GIL."
        ),
    )
    database_pre_ping: bool = Field(
        default=True, description="Test each pooled connection before use (survives restarts)."
    )
    access_log: bool = Field(
        default=False,
        description=(
            "Log one line per HTTP request (uvicorn's access log). Off by default: formatting "
            "and writing the line cost about 15% of a small internal request's CPU."
        ),
    )
    run_migrations: bool = Field(
        default=True, description="Upgrade the database to the latest migration on start."
    )
    # -- request limits (gridweave_runtime.server and gridweave_runtime.limits) --------------
    max_header_bytes: int = Field(
        default=16_384,
        ge=1_024,
        le=1_048_576,
        description="Largest request head (request line + headers), bytes; past it: 431.",
    )
    max_header_count: int = Field(
        default=100, ge=8, le=1_000, description="Most headers in one request; past it: 431."
    )
    header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description=(
            "Time a request head may take to arrive, from its first byte (or the connection's "
            "opening); past it: 408 and the connection is closed (slowloris)."
        ),
    )
    max_body_bytes: int = Field(
        default=1_048_576,
        ge=1_024,
        le=1_073_741_824,
        description=(
            "Largest request body, bytes (a route may declare a larger one); past it: 413, "
            "at once when Content-Length says so."
        ),
    )
    body_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3_600,
        description="Time a request body may take to arrive after its head; past it: 408.",
    )
    keep_alive_seconds: int = Field(
        default=5, ge=1, le=600, description="An idle keep-alive connection is closed after this."
    )
    max_error_fields: int = Field(
        default=20,
        ge=1,
        le=1_000,
        description=(
            "Most bad fields a 422 lists; the rest are counted in more_fields, so an error "
            "never grows with the input."
        ),
    )
    service_token: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("GRIDWEAVE_SERVICE_TOKEN"),
        description=(
            "GRIDWEAVE_SERVICE_TOKEN: this service's own credential, sent on every internal "
            "call it makes; its roles are bound to it in GRIDWEAVE_CREDENTIALS. Required: a "
            "service refuses to start without it."
        ),
    )
    credentials: str | None = Field(
        default=None,
        validation_alias=AliasChoices("GRIDWEAVE_CREDENTIALS"),
        description=(
            "GRIDWEAVE_CREDENTIALS: the deployment's credentials (each service token's "
            "SHA-256, its service and the roles it may act as), as JSON or a file's path. "
            "Required: a service accepts no internal call without it."
        ),
    )
    state_dir: Path = Field(
        default_factory=default_state_dir,
        validation_alias=AliasChoices("GRIDWEAVE_STATE_DIR"),
        description=(
            "GRIDWEAVE_STATE_DIR: where embedded servers keep their data "
            "(the embedded PostgreSQL lives in <state_dir>/postgres)."
        ),
    )

    def own_token(self) -> str:
        """This service's token (``GRIDWEAVE_SERVICE_TOKEN``); ValueError when it is unset."""
        if self.service_token is None or not self.service_token.get_secret_value():
            raise ValueError("GRIDWEAVE_SERVICE_TOKEN must be set")
        return self.service_token.get_secret_value()


class CreditCallerSettings(ServiceSettings):
    """The settings of a service that calls credit_service (metering, faucet)."""

    credit_service_url: str = Field(
        default="http://127.0.0.1:8400",
        validation_alias=AliasChoices("CREDIT_SERVICE_URL"),
        description="CREDIT_SERVICE_URL: base URL of credit_service.",
    )
    credit_timeout_seconds: float = Field(
        default=5.0, gt=0, le=120, description="Timeout of one call to credit_service."
    )
    credit_attempts: int = Field(
        default=3,
        ge=1,
        le=10,
        description=(
            "Attempts per call to credit_service (gridweave_clients' retry policy: connect "
            "errors always; timeouts, dropped connections and 5xx for replayable calls)."
        ),
    )


class ServeKeySettings(ServiceSettings):
    """The settings of a service that calls endpoints' replicas on Ray Serve (the platform's
    proxy, the gateway's probe): the secret their key derives from."""

    serve_key_secret: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("GRIDWEAVE_SERVE_KEY"),
        description=(
            "GRIDWEAVE_SERVE_KEY: the secret the platform and the gateway derive the key of "
            "Ray Serve's proxy from (every replica demands that key). Required by both."
        ),
    )

    def serve_key(self) -> str:
        """The cluster's Serve key; ValueError when ``GRIDWEAVE_SERVE_KEY`` is unset."""
        secret = self.serve_key_secret
        if secret is None or not secret.get_secret_value():
            raise ValueError("GRIDWEAVE_SERVE_KEY must be set")
        return serve_key(secret.get_secret_value())
