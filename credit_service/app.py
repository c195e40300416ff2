"""credit_service (port 8400): the wiring; routes in ``routers/``, rules in ``services/``."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI

from credit_service.routers import accounts, books, holds, spending_limits, transfers
from credit_service.settings import DATABASE_NAME, CreditSettings
from gridweave_runtime.app import create_service_app
from gridweave_runtime.async_connections import install_async_connections

__all__ = ["MIGRATIONS_DIR", "ROUTERS", "create_app"]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
#: Every route of the service: its OpenAPI document needs no database (the fuzz tests).
ROUTERS = (
    accounts.router,
    transfers.router,
    holds.router,
    spending_limits.router,
    books.router,
)


def create_app(settings: CreditSettings | None = None) -> FastAPI:
    """The credit_service app: database opened and migrated, routes mounted."""
    settings = settings or CreditSettings()
    app = create_service_app(
        service="credit_service",
        settings=settings,
        routers=ROUTERS,
        database=DATABASE_NAME,
        migrations_dir=MIGRATIONS_DIR,
    )
    install_async_connections(app, size=settings.database_pool_size)
    return app
