"""A real PostgreSQL for tests: the embedded server, or any server you point at.

``GRIDWEAVE_TEST_DATABASE_URL`` (any libpq or ``postgresql+psycopg://`` URL whose role may
create databases) replaces the embedded server. Each test gets a database of its own,
created empty and dropped afterwards: both are cheap.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from gridweave_runtime.postgres import (
    EmbeddedPostgresError,
    embedded_server_url,
    stop_embedded_server,
    to_sqlalchemy_url,
)

URL_VARIABLE = "GRIDWEAVE_TEST_DATABASE_URL"


class PostgresUnavailable(RuntimeError):
    """No real PostgreSQL can be had here."""


@dataclass(frozen=True)
class PostgresTestServer:
    """A reachable PostgreSQL server on which tests create and drop their databases."""

    admin_url: str  # postgresql+psycopg:// URL of a database to run CREATE DATABASE from
    started_here: bool

    def _admin_conninfo(self) -> str:
        return make_url(self.admin_url).set(drivername="postgresql").render_as_string(False)

    def create_database(self, prefix: str = "gwtest") -> str:
        """Create an empty database with a unique name; return its SQLAlchemy URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self._admin_conninfo(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return to_sqlalchemy_url(self._admin_conninfo(), name)

    @contextmanager
    def database(self, prefix: str = "gwtest") -> Iterator[str]:
        """A fresh empty database for the block (its URL), dropped when the block ends."""
        url = self.create_database(prefix)
        try:
            yield url
        finally:
            self.drop_database(url)

    def drop_database(self, url: str) -> None:
        """Drop the database ``url`` names, closing its remaining connections."""
        name = make_url(url).database
        assert name is not None
        with psycopg.connect(self._admin_conninfo(), autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _check_reachable(admin_url: str) -> None:
    conninfo = make_url(admin_url).set(drivername="postgresql").render_as_string(False)
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        raise PostgresUnavailable(f"cannot connect to {URL_VARIABLE}: {exc}") from exc


@contextmanager
def start_test_postgres() -> Iterator[PostgresTestServer]:
    """The server named by ``GRIDWEAVE_TEST_DATABASE_URL``, else a fresh embedded one."""
    if override := os.environ.get(URL_VARIABLE):
        admin_url = to_sqlalchemy_url(override) if "+" not in override.split(":")[0] else override
        _check_reachable(admin_url)
        yield PostgresTestServer(admin_url=admin_url, started_here=False)
        return
    state_dir = Path(tempfile.mkdtemp(prefix="gridweave-pg-"))
    try:
        libpq_url = embedded_server_url(state_dir, delete_on_exit=True)
    except EmbeddedPostgresError as exc:
        raise PostgresUnavailable(str(exc)) from exc
    try:
        yield PostgresTestServer(admin_url=to_sqlalchemy_url(libpq_url), started_here=True)
    finally:
        stop_embedded_server(state_dir)
