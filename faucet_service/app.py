"""faucet_service (port 8500): the wiring; routes in ``routers/``, rules in ``services/``."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi import FastAPI

from credit_service.client import connect_credit_service
from faucet_service.routers import outbox, refills, signups
from faucet_service.settings import DATABASE_NAME, FaucetSettings
from gridweave_runtime.app import create_service_app

__all__ = ["CREDIT_ROLE", "MIGRATIONS_DIR", "create_app"]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# credit_service lets only the admin and faucet roles mint
CREDIT_ROLE = "faucet"


def create_app(
    settings: FaucetSettings | None = None,
    *,
    credit_transport: httpx.BaseTransport | None = None,
) -> FastAPI:
    """The faucet_service app: database opened and migrated, credit client ready."""
    settings = settings or FaucetSettings()
    app = create_service_app(
        service="faucet_service",
        settings=settings,
        routers=[signups.router, refills.router, outbox.router],
        database=DATABASE_NAME,
        migrations_dir=MIGRATIONS_DIR,
    )
    connect_credit_service(app, settings, role=CREDIT_ROLE, transport=credit_transport)
    return app
