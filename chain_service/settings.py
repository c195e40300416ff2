"""chain_service settings: every ``ServiceSettings`` field with the ``CHAIN_`` prefix.

``CHAIN_HOST``, ``CHAIN_PORT`` (8600), ``CHAIN_DATABASE_URL`` (unset: the embedded
PostgreSQL, database ``chain``), ``CHAIN_DATABASE_POOL_SIZE``, ``CHAIN_DATABASE_MAX_OVERFLOW``,
``CHAIN_RUN_MIGRATIONS``, ``CHAIN_BATCH_INTERVAL_SECONDS``, ``CHAIN_BATCH_MAX_RECEIPTS``,
``CHAIN_SIGNING_KEY_FILE``, ``CHAIN_ENABLED``, ``CHAIN_COMETBFT_RPC_URL``,
``CHAIN_ANCHOR_POLL_SECONDS``, ``CHAIN_ANCHOR_TIMEOUT_SECONDS``, ``CHAIN_NICENESS``, plus the
``GRIDWEAVE_SERVICE_TOKEN``, ``GRIDWEAVE_CREDENTIALS`` and ``GRIDWEAVE_STATE_DIR``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from gridweave_runtime.settings import ServiceSettings

__all__ = ["DATABASE_NAME", "ChainSettings"]

DATABASE_NAME = "chain"


class ChainSettings(ServiceSettings):
    """Settings of chain_service (prefix ``CHAIN_``)."""

    model_config = SettingsConfigDict(env_prefix="CHAIN_")

    port: int = Field(default=8600, ge=1, le=65535, description="TCP port of the HTTP server.")
    batch_interval_seconds: float = Field(
        default=5.0,
        gt=0,
        le=86_400,
        description="How often the receipts not in a batch yet are sealed into one; 0 < x.",
    )
    batch_max_receipts: int = Field(
        default=1024,
        ge=1,
        le=65_536,
        description="Most receipts in one batch (a longer backlog is sealed in several).",
    )
    signing_key_file: Path | None = Field(
        default=None,
        description=(
            "PEM (PKCS#8) Ed25519 private key the batches are signed with. Unset: "
            "<GRIDWEAVE_STATE_DIR>/chain/batch-signing-key.pem, created (mode 0600) when missing."
        ),
    )

    niceness: int = Field(
        default=10,
        ge=0,
        le=19,
        description=(
            "CPU niceness of chain_service and of the CometBFT node and ABCI application "
            "python -m chain_service.node starts, set at their start (0: left as started): "
            "the chain is asynchronous, so under CPU contention the settlement path goes first "
            "and the chain catches up after."
        ),
    )
    enabled: bool = Field(
        default=False,
        description=(
            "CHAIN_ENABLED: anchor each batch's root in CometBFT. Off: the hash chain and the "
            "signed Merkle batches only."
        ),
    )
    cometbft_rpc_url: str = Field(
        default="http://127.0.0.1:26657", description="RPC of the CometBFT node to anchor in."
    )
    anchor_poll_seconds: float = Field(
        default=0.05,
        gt=0,
        le=60,
        description="How often a sent anchor is looked for in the chain until committed.",
    )
    anchor_idle_seconds: float = Field(
        default=1.0,
        gt=0,
        le=3600,
        description=(
            "How often an idle anchorer looks for batches to anchor (a batch sealed in this "
            "process wakes it at once; this finds those of other replicas, and retries)."
        ),
    )
    anchor_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="How long a sent anchor is waited for before it is sent again.",
    )

    def resolved_signing_key_file(self) -> Path:
        """The signing key's path, the default one when unset."""
        return self.signing_key_file or self.state_dir / "chain" / "batch-signing-key.pem"
