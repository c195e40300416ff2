"""The app factory every service's ``app.py`` calls, so that file stays a few lines."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import uvicorn
from anyio import to_thread
from fastapi import APIRouter, FastAPI
from sqlalchemy import text

from gridweave_runtime.auth import PUBLIC_PATHS, install_internal_auth
from gridweave_runtime.credentials import Credentials, load_credentials
from gridweave_runtime.database import Database, create_database, upgrade_database
from gridweave_runtime.errors import install_error_handlers
from gridweave_runtime.limits import BodyLimits, install_body_guard, install_body_reader
from gridweave_runtime.metrics import install_health_and_metrics
from gridweave_runtime.postgres import resolve_database_url, stop_embedded_server
from gridweave_runtime.server import server_config
from gridweave_runtime.settings import ServiceSettings

__all__ = [
    "ConfigurationError",
    "create_service_app",
    "open_service_database",
    "serve",
    "service_credentials",
]

_logger = logging.getLogger("gridweave")


class ConfigurationError(RuntimeError):
    """A service was configured in a way it cannot start with."""


def service_credentials(service: str, settings: ServiceSettings) -> Credentials:
    """The credentials ``service`` accepts, once its own token is set too.

    Raises:
        ConfigurationError: ``GRIDWEAVE_SERVICE_TOKEN`` or ``GRIDWEAVE_CREDENTIALS`` is unset,
        or the credentials document cannot be read or names a field wrong.
    """
    try:
        settings.own_token()
        if not settings.credentials:
            raise ValueError("GRIDWEAVE_CREDENTIALS must be set")
        return load_credentials(settings.credentials)
    except ValueError as exc:
        raise ConfigurationError(f"{service}: {exc}") from None


def open_service_database(
    settings: ServiceSettings, *, database: str, migrations_dir: Path | None
) -> Database:
    """Resolve (embedded by default), create if missing, migrate and open a service's database."""
    url = resolve_database_url(
        settings.database_url, database=database, state_dir=settings.state_dir
    )
    if settings.run_migrations and migrations_dir is not None:
        upgrade_database(url, migrations_dir)
    return create_database(
        url,
        pool_size=settings.database_pool_size,
        max_overflow=settings.database_max_overflow,
        pre_ping=settings.database_pre_ping,
    )


def create_service_app(
    *,
    service: str,
    settings: ServiceSettings,
    routers: Sequence[APIRouter],
    database: str | None = None,
    migrations_dir: Path | None = None,
    version: str = "0.1.0",
    resources: Callable[[FastAPI], AbstractAsyncContextManager[None]] | None = None,
    body_limits: Mapping[str, int] | None = None,
    public_paths: Collection[str] = (),
    prefix_roles: Mapping[str, tuple[str, ...]] | None = None,
    auth: Callable[[FastAPI], None] | None = None,
    health_check: Callable[[FastAPI], bool] | None = None,
) -> FastAPI:
    """A FastAPI app with auth, error mapping, /healthz, /metrics and (optionally) a database.

    With ``database`` set, the database is opened (and migrated) before the app is returned,
    kept in ``app.state.database`` and disposed of at shutdown; ``/healthz`` runs ``SELECT 1``.
    ``resources`` (optional) is entered when the app starts serving and left when it stops:
    what a service opens inside its event loop (an asyncio client's connections).
    Request bodies are bounded by ``settings.max_body_bytes``, or per path prefix by
    ``body_limits`` where a route legitimately takes more (``gridweave_runtime.limits``).
    ``public_paths`` are served without a credential besides ``/healthz`` and
    ``/metrics`` (exact paths; such a route checks its own credential). ``prefix_roles``:
    the roles that may call under a path prefix, checked with the credential (a hot path's
    alternative to ``callable_by``).
    ``auth`` replaces the credential check with the app's own (platform_service's API
    keys); it installs a middleware, which runs where the token check would.
    ``health_check`` (given the app; run in a thread) must also say True for ``/healthz``
    to answer 200: what the service needs besides its database (the gateway's informers).
    """
    credentials = service_credentials(service, settings)
    opened: Database | None = None
    if database is not None:
        opened = open_service_database(settings, database=database, migrations_dir=migrations_dir)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        to_thread.current_default_thread_limiter().total_tokens = settings.worker_threads
        try:
            if resources is None:
                yield
            else:
                async with resources(app):
                    yield
        finally:  # also when the service's resources failed to open or to close
            if opened is not None:
                opened.dispose()
                if settings.database_url is None:
                    # uvicorn re-raises SIGTERM after a graceful shutdown, so atexit never
                    # runs: let go of the embedded server here (it stops when no process
                    # holds it)
                    stop_embedded_server(settings.state_dir)

    # No unauthenticated /docs or /openapi.json: every route but /healthz and /metrics needs
    # a service credential. The document itself is ``app.openapi()``. Gridweave's metrics are
    # Prometheus (/metrics): FastAPI's own OpenTelemetry hooks are off, so no request pays
    # for looking up providers nobody configured.
    app = FastAPI(
        title=f"Gridweave {service}",
        version=version,
        telemetry={"tracing": False, "metrics": False, "logs": False},
        lifespan=lifespan,
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.credentials = credentials
    app.state.database = opened
    # The body is read inside auth (a request without the token is refused unread, and the
    # guard outside closes its connection); an announced oversized body is refused outside.
    limits = BodyLimits(settings.max_body_bytes, body_limits)
    install_body_reader(app, limits=limits, timeout_seconds=settings.body_timeout_seconds)
    if auth is not None:
        auth(app)
    else:
        install_internal_auth(
            app,
            credentials,
            public_paths=PUBLIC_PATHS | {*public_paths},
            prefix_roles=prefix_roles,
        )
    install_body_guard(app, limits=limits)
    install_error_handlers(app, max_fields=settings.max_error_fields)

    def database_reachable() -> bool:
        if opened is None:
            return True
        try:
            with opened.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except Exception:  # any failure means unhealthy; the reason goes to the log
            _logger.warning("%s: database health check failed", service, exc_info=True)
            return False
        return True

    def healthy() -> bool:
        return database_reachable() and (health_check is None or health_check(app))

    install_health_and_metrics(app, service, healthy)
    for router in routers:
        app.include_router(router)
    return app


def serve(app: FastAPI, settings: ServiceSettings) -> None:
    """Serve ``app`` with uvicorn on the configured host and port until interrupted.

    Under the request-head limits of ``gridweave_runtime.server`` (``server_config``), with
    ``X-Forwarded-For`` not believed.
    """
    uvicorn.Server(server_config(app, settings)).run()
