"""credit_service: balances, holds, mint/deduct/transfer over an append-only ledger."""

from __future__ import annotations

from credit_service.app import create_app
from credit_service.settings import CreditSettings

__all__ = ["CreditSettings", "create_app"]
