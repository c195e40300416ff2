"""Alembic environment of the chain database."""

from __future__ import annotations

from chain_service.models import ChainBase
from gridweave_runtime.migrations_env import run_migrations

run_migrations(ChainBase.metadata)
