"""chain_service: receipts of settlements in an append-only hash chain, sealed in Merkle batches."""

from __future__ import annotations

from chain_service.app import create_app
from chain_service.settings import ChainSettings

__all__ = ["ChainSettings", "create_app"]
