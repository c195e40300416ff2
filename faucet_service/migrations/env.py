"""Alembic environment of the faucet database."""

from __future__ import annotations

from faucet_service.models import FaucetBase
from gridweave_runtime.migrations_env import run_migrations

run_migrations(FaucetBase.metadata)
