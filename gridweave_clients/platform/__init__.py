"""The platform_service client (blocking and asyncio) and its wire models: the public API the
SDK and the CLI call with a user's API key."""

from __future__ import annotations

from gridweave_clients.platform.client import AsyncPlatformClient, PlatformClient

__all__ = ["AsyncPlatformClient", "PlatformClient"]
