"""The credit_service client (blocking and asyncio) and its wire models."""

from __future__ import annotations

from gridweave_clients.credit.client import AsyncCreditClient, CreditClient

__all__ = ["AsyncCreditClient", "CreditClient"]
