"""platform_service: the one public API (users, API keys, jobs, credits, usage)."""

from __future__ import annotations

from platform_service.app import create_app
from platform_service.settings import PlatformSettings

__all__ = ["PlatformSettings", "create_app"]
