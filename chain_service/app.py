"""chain_service (port 8600): the wiring; routes in ``routers/``, rules in ``services/``."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI

from chain_service.routers import batches, receipts
from chain_service.sealer import sealing_batches
from chain_service.settings import DATABASE_NAME, ChainSettings
from chain_service.signing import load_signing_key
from gridweave_runtime.app import create_service_app

__all__ = ["MIGRATIONS_DIR", "ROUTERS", "create_app"]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
#: Every route of the service: its OpenAPI document needs no database (the fuzz tests).
ROUTERS = (receipts.router, batches.router)


def create_app(settings: ChainSettings | None = None) -> FastAPI:
    """The chain_service app: signing key loaded, database opened and migrated, sealer ready."""
    settings = settings or ChainSettings()
    key = load_signing_key(settings.resolved_signing_key_file())
    app = create_service_app(
        service="chain_service",
        settings=settings,
        routers=ROUTERS,
        database=DATABASE_NAME,
        migrations_dir=MIGRATIONS_DIR,
        resources=sealing_batches,  # batches sealed on the interval, off the request path
    )
    app.state.signing_key = key
    return app
