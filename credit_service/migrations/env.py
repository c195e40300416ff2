"""Alembic environment of the credits database."""

from __future__ import annotations

from credit_service.models import CreditBase
from gridweave_runtime.migrations_env import run_migrations

run_migrations(CreditBase.metadata)
