"""platform_service (port 8100), the one public API: the wiring.

Routes in ``routers/``, rules in ``services/``. Every route needs an API key but the public
ones (``auth.PUBLIC_PATHS``); the internal services are called with its service token and
the user's id. Job submissions may be large (the pickled function and arguments): their
body limit is ``PLATFORM_MAX_SUBMISSION_BYTES``, every other route keeps the runtime's.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import httpx
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse

from gridweave_clients import RetryPolicy
from gridweave_clients.chain import AsyncChainClient
from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.faucet import FaucetClient
from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering.price_source import MeteringPrices
from gridweave_clients.nodes import AsyncNodeRegistryClient
from gridweave_runtime.app import create_service_app
from gridweave_runtime.clients import install_client
from gridweave_runtime.serve_key import SERVE_KEY_HEADER
from gridweave_runtime.storage import ObjectStore, open_object_store
from gridweave_runtime.tasks import install_task
from platform_service.auth import ApiKeyMiddleware
from platform_service.openapi import apply_operation_ids, document_for
from platform_service.routers import (
    account,
    console,
    endpoints,
    jobs,
    join_keys,
    keys,
    maps,
    nodes,
    receipts,
    registry,
    sessions,
    signups,
    spending_limits,
    user_limits,
    users,
)
from platform_service.services.accepted_keys import AcceptedKeys
from platform_service.services.endpoint_proxy import EndpointProxy
from platform_service.services.endpoints import EndpointServices
from platform_service.services.images import ImageRegistry
from platform_service.services.jobs import JobServices
from platform_service.services.keys import api_key_secret
from platform_service.services.outcomes import LogStreamSlots
from platform_service.services.registry import MaintenanceWindow
from platform_service.services.registry_tokens import load_token_signer
from platform_service.services.user_limits import SharesSync, read_user_quota
from platform_service.settings import DATABASE_NAME, PlatformSettings

__all__ = ["MIGRATIONS_DIR", "ROLE", "ROUTERS", "create_app"]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
ROUTERS = (
    signups.router,
    sessions.router,
    users.router,
    user_limits.router,
    spending_limits.router,
    keys.router,
    jobs.router,
    maps.router,
    endpoints.router,
    account.router,
    nodes.router,
    join_keys.router,
    receipts.router,
    registry.router,
    console.router,
)
#: The registry's reconciliation lists every blob of its storage in one body.
REGISTRY_REPORT_BYTES = 256 * 2**20
#: The role the platform calls the internal services with (at credit_service, the
#: namespace of its hold keys).
ROLE = "platform"


def create_app(
    settings: PlatformSettings | None = None,
    *,
    store: ObjectStore | None = None,
) -> FastAPI:
    """The platform app: database opened and migrated, the services' clients ready.

    ``store`` replaces the object store the settings name.
    """
    settings = settings or PlatformSettings()
    hmac_key = api_key_secret(settings) if settings.service_token else b""

    accepted_keys = AcceptedKeys(settings.api_key_cache_seconds)

    def install_api_keys(app: FastAPI) -> None:
        # create_service_app opened the database before it installs the auth
        app.add_middleware(
            ApiKeyMiddleware,
            database=app.state.database,
            hmac_key=hmac_key,
            accepted=accepted_keys,
        )

    apply_operation_ids(ROUTERS)
    app = create_service_app(
        service="platform_service",
        settings=settings,
        routers=ROUTERS,
        database=DATABASE_NAME,
        migrations_dir=MIGRATIONS_DIR,
        body_limits={
            "/v1/jobs": settings.max_submission_bytes,
            "/v1/endpoints": settings.max_submission_bytes,
            "/v1/registry/usage/report": REGISTRY_REPORT_BYTES,
        },
        auth=install_api_keys,
    )
    app.state.api_key_hmac = hmac_key
    app.state.accepted_keys = accepted_keys
    app.state.registry_signer = load_token_signer(settings)
    app.state.registry_maintenance = MaintenanceWindow(settings.registry_token_seconds)
    token = settings.own_token()
    timeout = settings.downstream_timeout_seconds
    credit = AsyncCreditClient(
        settings.credit_service_url,
        token,
        role=ROLE,
        retry=RetryPolicy(attempts=settings.credit_attempts),
        timeout=settings.credit_timeout_seconds,
    )
    gateway = AsyncGatewayClient(settings.gateway_url, token, role=ROLE, timeout=timeout)
    metering = AsyncMeteringClient(settings.metering_service_url, token, role=ROLE, timeout=timeout)
    faucet = FaucetClient(settings.faucet_service_url, token, role=ROLE, timeout=timeout)
    install_client(app, "credit_client", credit)
    install_client(app, "gateway_client", gateway)
    install_client(app, "metering_client", metering)
    prices = MeteringPrices(metering)  # the table metering bills by, read from it
    install_client(app, "faucet_client", faucet)
    chain = AsyncChainClient(settings.chain_service_url, token, role=ROLE, timeout=timeout)
    install_client(app, "chain_client", chain)
    # join keys and cordons are an admin's at kuberay-service; only admin routes call it
    node_registry = AsyncNodeRegistryClient(
        settings.kuberay_url, token, role="admin", timeout=timeout
    )
    install_client(app, "node_registry_client", node_registry)
    registry_http = httpx.AsyncClient(timeout=httpx.Timeout(10.0), trust_env=False)
    install_client(app, "registry_http", registry_http)
    app.state.jobs = JobServices(
        credit=credit,
        metering=metering,
        gateway=gateway,
        store=store or open_object_store(settings.storage_config()),
        prices=prices,
        id_secret=hmac_key,
        images=ImageRegistry(
            url=settings.registry_url,
            signer=app.state.registry_signer,
            database=app.state.database,
            http=registry_http,
            public_namespace=settings.registry_public_namespace,
            default_quota=int(settings.registry_quota_gb * 10**9),
        ),
    )
    app.state.log_streams = LogStreamSlots(settings.max_log_streams_per_user)
    app.state.endpoints = EndpointServices(
        credit=credit,
        gateway=gateway,
        store=app.state.jobs.store,
        prices=prices,
        id_secret=hmac_key,
        billing_seconds=settings.endpoint_billing_seconds,
        wake_seconds=settings.endpoint_wake_seconds,
        model_roots=settings.resolved_model_roots(),
        images=app.state.jobs.images,
        metering=metering,
        quota_of=partial(read_user_quota, app.state.database),
    )
    upstream = httpx.AsyncClient(
        timeout=httpx.Timeout(10.0, read=settings.endpoint_read_timeout_seconds),
        limits=httpx.Limits(max_connections=1000, max_keepalive_connections=200),
        trust_env=False,
        headers={SERVE_KEY_HEADER: settings.serve_key()},  # every replica demands it
    )
    install_client(app, "endpoint_proxy", EndpointProxy(app.state.endpoints, upstream))
    app.state.shares_sync = SharesSync(app.state.database, gateway)
    if settings.shares_sync_seconds > 0:
        shares = app.state.shares_sync
        interval = settings.shares_sync_seconds
        install_task(app, "shares-sync", lambda: shares.run(interval_seconds=interval))
    _install_docs(app)
    return app


def _install_docs(app: FastAPI) -> None:
    """The API's OpenAPI document and its Swagger UI, public (the runtime serves neither)."""

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_document() -> JSONResponse:
        return JSONResponse(document_for(app))

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=app.title)
