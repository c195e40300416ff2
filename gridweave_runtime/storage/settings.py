"""The object-storage settings of the services that share the store (platform, gateway).

``<PREFIX>_STORAGE_DIR`` is per service (both default to ``<GRIDWEAVE_STATE_DIR>/objects``,
the same directory, so on one machine what the platform writes the workers read); the S3
settings are deployment-wide and keep their names whatever the prefix.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr

from gridweave_runtime.settings import ServiceSettings
from gridweave_runtime.storage.store import StorageConfig

__all__ = ["ObjectStorageSettings"]


class ObjectStorageSettings(ServiceSettings):
    """A service that reads or writes job objects: the local directory, or S3."""

    storage_dir: Path | None = Field(
        default=None,
        description=(
            "Directory of the local object store (functions, arguments, results, tracebacks, "
            "logs); unset: <GRIDWEAVE_STATE_DIR>/objects. Not used when S3_ENDPOINT is set."
        ),
    )
    s3_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("S3_ENDPOINT"),
        description="S3_ENDPOINT: an S3 API (MinIO, AWS, ...) for object storage.",
    )
    s3_access_key: str | None = Field(
        default=None, validation_alias=AliasChoices("S3_ACCESS_KEY"), description="S3_ACCESS_KEY."
    )
    s3_secret_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("S3_SECRET_KEY"), description="S3_SECRET_KEY."
    )
    s3_bucket: str = Field(
        default="gridweave",
        validation_alias=AliasChoices("S3_BUCKET"),
        description="S3_BUCKET: the bucket job objects go to.",
    )

    def storage_config(self) -> StorageConfig:
        """Where job objects go: S3 when configured, else the storage directory."""
        root = self.storage_dir or self.state_dir / "objects"
        secret = self.s3_secret_key.get_secret_value() if self.s3_secret_key else None
        return StorageConfig(
            root=str(root),
            s3_endpoint=self.s3_endpoint,
            s3_access_key=self.s3_access_key,
            s3_secret_key=secret,
            s3_bucket=self.s3_bucket,
        )
