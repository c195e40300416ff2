"""State directories with an embedded PostgreSQL of their own, for the tests of its roles
and passwords (``tests/gridweave_runtime/test_postgres_roles.py``, the deploy SQL's test).

Not pytest's ``tmp_path``: pytest makes its root 0700, which the server's own system user
(when the tests run as root) could not traverse.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from gridweave_runtime.postgres import stop_embedded_server

__all__ = ["connect", "login_refused", "state_directory"]


@contextmanager
def state_directory(prefix: str = "gridweave-roles-") -> Iterator[Path]:
    """A new state directory, its embedded server stopped and the directory removed after."""
    state_dir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield state_dir
    finally:
        stop_embedded_server(state_dir)
        shutil.rmtree(state_dir, ignore_errors=True)


def _conninfo(url: str, *, database: str | None = None, password: str | None = None) -> str:
    parsed = make_url(url).set(drivername="postgresql")
    if database is not None:
        parsed = parsed.set(database=database)
    if password is not None:
        parsed = parsed._replace(password=password or None)  # "": none at all
    return parsed.render_as_string(hide_password=False)


def connect(
    url: str, *, database: str | None = None, password: str | None = None
) -> psycopg.Connection[tuple[object, ...]]:
    """An autocommit connection to ``url`` (another ``database``, another ``password``:
    ``""`` for none); no ``~/.pgpass`` answers for a missing password."""
    return psycopg.connect(
        _conninfo(url, database=database, password=password),
        autocommit=True,
        passfile="/nonexistent/gridweave-passfile",
        connect_timeout=10,
    )


def login_refused(url: str, *, database: str | None = None, password: str | None = None) -> str:
    """The server's refusal of this login, as text; fails the test when it lets it in."""
    try:
        with connect(url, database=database, password=password):
            pass
    except psycopg.OperationalError as exc:
        return str(exc)
    raise AssertionError(f"logged in: {make_url(url).username}@{database or 'its database'}")
