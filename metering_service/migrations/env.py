"""Alembic environment of the metering database."""

from __future__ import annotations

from gridweave_runtime.migrations_env import run_migrations
from metering_service.models import MeteringBase

run_migrations(MeteringBase.metadata)
