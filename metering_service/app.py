"""metering_service (port 8300): the wiring; routes in ``routers/``, rules in ``services/``.

Metering owns every credit hold: it places them for the platform (``/v1/holds``), settles
them from the gateway's usage (``/v1/usage``), gives back the ones the platform or the
gateway names (``/v1/releases``) and, with its hold sweeper (``services.hold_sweeper``, a
task of the API's loop), the ones nothing would settle.

The API only queues each settlement's receipt (in the settling transaction); the receipt
deliverer, ``python -m metering_service.deliverer``, sends them to chain_service from a
process of its own (``metering_service.deliverer`` says why).
"""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi import FastAPI

from gridweave_clients import RetryPolicy
from gridweave_clients.credit import AsyncCreditClient, CreditClient
from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_runtime.app import create_service_app
from gridweave_runtime.async_connections import install_async_connections
from gridweave_runtime.clients import install_client
from gridweave_runtime.tasks import install_task
from metering_service.routers import holds, prices, usage
from metering_service.services.hold_sweeper import HoldSweeper
from metering_service.settings import DATABASE_NAME, MeteringSettings

__all__ = ["ROLE", "MIGRATIONS_DIR", "ROUTERS", "create_app"]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
#: Every route of the service: its OpenAPI document needs no database (the fuzz tests).
ROUTERS = (holds.router, prices.router, usage.router)
#: The role of every call metering makes (credit_service, job_gateway).
ROLE = "metering"


def create_app(
    settings: MeteringSettings | None = None,
    *,
    credit_transport: httpx.BaseTransport | None = None,
    async_credit_transport: httpx.AsyncBaseTransport | None = None,
) -> FastAPI:
    """The metering_service app: database migrated, credit clients ready.

    A first usage report settles on the event loop (``services.first_report``: the async
    connections and credit client, ``async_credit_transport``); replays, refusals and the
    settle route take the worker threads' sessions and the blocking client
    (``credit_transport``)."""
    settings = settings or MeteringSettings()
    app = create_service_app(
        service="metering_service",
        settings=settings,
        routers=ROUTERS,
        database=DATABASE_NAME,
        migrations_dir=MIGRATIONS_DIR,
    )
    token = settings.own_token()
    url, timeout = settings.credit_service_url, settings.credit_timeout_seconds
    retry = RetryPolicy(attempts=settings.credit_attempts)
    connections = settings.credit_connections
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    install_client(
        app,
        "credit_client",
        CreditClient(
            url,
            token,
            role=ROLE,
            timeout=timeout,
            retry=retry,
            transport=credit_transport,
            limits=limits,
        ),
    )
    install_client(
        app,
        "async_credit_client",
        AsyncCreditClient(
            url,
            token,
            role=ROLE,
            timeout=timeout,
            retry=retry,
            transport=async_credit_transport,
            limits=limits,
        ),
    )
    # a first report keeps its transaction open through its credit call: more connections
    # than credit calls would only hold transactions open while they wait for one
    install_async_connections(app, size=connections)
    if settings.hold_sweep_seconds > 0:
        _install_hold_sweeper(app, settings)
    return app


def _install_hold_sweeper(app: FastAPI, settings: MeteringSettings) -> None:
    """The hold sweeper, a task of the app's loop, on clients of its own."""
    token = settings.own_token()
    credit = AsyncCreditClient(
        settings.credit_service_url,
        token,
        role=ROLE,
        timeout=settings.credit_timeout_seconds,
        retry=RetryPolicy(attempts=settings.credit_attempts),
    )
    gateway = AsyncGatewayClient(
        settings.gateway_url, token, role=ROLE, timeout=settings.gateway_timeout_seconds
    )
    install_client(app, "sweeper_credit_client", credit)
    install_client(app, "sweeper_gateway_client", gateway)
    sweeper = HoldSweeper(credit, gateway, grace_seconds=settings.hold_grace_seconds)
    interval = settings.hold_sweep_seconds
    install_task(app, "hold-sweep", lambda: sweeper.run(interval_seconds=interval))
