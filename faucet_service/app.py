"""faucet_service (port 8500): the wiring; routes in ``routers/``, rules in ``services/``."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi import FastAPI

from faucet_service.routers import outbox, refills, signins, signups
from faucet_service.sender import sending_mail
from faucet_service.settings import DATABASE_NAME, FaucetSettings
from gridweave_clients import RetryPolicy
from gridweave_clients.credit import CreditClient
from gridweave_runtime.app import create_service_app
from gridweave_runtime.clients import install_client

__all__ = ["CREDIT_ROLE", "MIGRATIONS_DIR", "ROUTERS", "create_app"]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
#: Every route of the service: its OpenAPI document needs no database (the fuzz tests).
ROUTERS = (signups.router, signins.router, refills.router, outbox.router)
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
        routers=ROUTERS,
        database=DATABASE_NAME,
        migrations_dir=MIGRATIONS_DIR,
        resources=sending_mail,  # the verification emails, sent off the request path
    )
    credit = CreditClient(
        settings.credit_service_url,
        settings.own_token(),
        role=CREDIT_ROLE,
        timeout=settings.credit_timeout_seconds,
        retry=RetryPolicy(attempts=settings.credit_attempts),
        transport=credit_transport,
    )
    install_client(app, "credit_client", credit)
    return app
