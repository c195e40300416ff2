"""The faucet_service client (blocking and asyncio) and its wire models."""

from __future__ import annotations

from gridweave_clients.faucet.client import AsyncFaucetClient, FaucetClient

__all__ = ["AsyncFaucetClient", "FaucetClient"]
