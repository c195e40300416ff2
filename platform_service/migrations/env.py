"""Alembic environment of the platform database."""

from __future__ import annotations

from gridweave_runtime.migrations_env import run_migrations
from platform_service.models import PlatformBase

run_migrations(PlatformBase.metadata)
