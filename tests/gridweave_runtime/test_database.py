"""Settings, the embedded PostgreSQL helpers and migrations, against a real server."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url

from credit_service.app import MIGRATIONS_DIR
from credit_service.settings import CreditSettings
from gridweave_runtime import (
    ConfigurationError,
    EmbeddedPostgresError,
    create_database,
    create_service_app,
    ensure_database,
    resolve_database_url,
    upgrade_database,
)
from gridweave_runtime.postgres import stop_embedded_server
from tests.support.postgres import PostgresTestServer
from tests.support.unavailable import fail_or_skip

pytestmark = pytest.mark.postgres


class TestSettings:
    def test_the_service_prefix_and_the_shared_names(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.setenv("CREDITS_DATABASE_URL", "postgresql+psycopg://u:p@db/credits")
        monkeypatch.setenv("CREDITS_PORT", "9400")
        monkeypatch.setenv("GRIDWEAVE_SERVICE_TOKEN", "t0k")
        monkeypatch.setenv("GRIDWEAVE_STATE_DIR", str(tmp_path))
        settings = CreditSettings()
        assert settings.database_url == "postgresql+psycopg://u:p@db/credits"
        assert settings.port == 9400
        assert settings.own_token() == "t0k"
        assert "t0k" not in repr(settings)
        assert settings.state_dir == tmp_path

    def test_a_service_will_not_start_without_a_token(self, tmp_path: Path) -> None:
        settings = CreditSettings(state_dir=tmp_path, service_token=None, credentials="{}")
        with pytest.raises(ConfigurationError, match="GRIDWEAVE_SERVICE_TOKEN"):
            create_service_app(service="credit_service", settings=settings, routers=[])

    def test_a_service_will_not_start_without_the_credentials(self, tmp_path: Path) -> None:
        settings = CreditSettings(state_dir=tmp_path, service_token="t0k", credentials=None)
        with pytest.raises(ConfigurationError, match="GRIDWEAVE_CREDENTIALS"):
            create_service_app(service="credit_service", settings=settings, routers=[])

    def test_credentials_that_name_a_field_wrong_are_refused_by_it(self, tmp_path: Path) -> None:
        document = '{"credentials": [{"name": "metering", "sha256": "ab", "roles": ["m"]}]}'
        settings = CreditSettings(state_dir=tmp_path, service_token="t0k", credentials=document)
        with pytest.raises(ConfigurationError, match=r"credentials\.0\.sha256"):
            create_service_app(service="credit_service", settings=settings, routers=[])


class TestDatabase:
    def test_ensure_database_creates_once(self, postgres: PostgresTestServer) -> None:
        url = postgres.create_database()
        postgres.drop_database(url)
        ensure_database(url)
        ensure_database(url)  # already there: no error
        database = create_database(url)
        try:
            with database.engine.connect() as connection:
                assert connection.execute(text("SELECT current_database()")).scalar() == (
                    make_url(url).database
                )
        finally:
            database.dispose()
            postgres.drop_database(url)

    def test_ensure_database_refuses_odd_names(self) -> None:
        with pytest.raises(ValueError, match="database name"):
            ensure_database("postgresql+psycopg://u@h/bad-name;drop")

    def test_migrations_upgrade_an_empty_database_and_rerun_harmlessly(
        self, postgres_database: str
    ) -> None:
        upgrade_database(postgres_database, MIGRATIONS_DIR)
        upgrade_database(postgres_database, MIGRATIONS_DIR)
        database = create_database(postgres_database)
        try:
            tables = set(inspect(database.engine).get_table_names())
            assert {
                "accounts",
                "ledger_entries",
                "holds",
                "operations",
                "alembic_version",
            } <= tables
        finally:
            database.dispose()

    def test_the_ledger_refuses_update_and_delete(self, postgres_database: str) -> None:
        upgrade_database(postgres_database, MIGRATIONS_DIR)
        conninfo = make_url(postgres_database).set(drivername="postgresql").render_as_string(False)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("INSERT INTO accounts (user_id, balance) VALUES ('a', 5)")
            conn.execute(
                "INSERT INTO ledger_entries"
                " (account_id, amount, balance_after, kind, operation_key)"
                " SELECT id, 5, 5, 'mint', 'k' FROM accounts"
            )
            for statement in (
                "UPDATE ledger_entries SET amount = 6",
                "DELETE FROM ledger_entries",
                "TRUNCATE ledger_entries",
            ):
                with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                    conn.execute(statement)
            with pytest.raises(psycopg.errors.CheckViolation):
                conn.execute("UPDATE accounts SET balance = -1")


class TestEmbeddedDefault:
    def test_the_embedded_server_keeps_data_across_restarts(self) -> None:
        # not pytest's tmp_path: pytest resets its root to 0700, which the server's own
        # system user (when run as root) could then no longer traverse
        state_dir = Path(tempfile.mkdtemp(prefix="gridweave-state-"))
        try:
            self._restart_and_read(state_dir)
        finally:
            shutil.rmtree(state_dir, ignore_errors=True)

    def _restart_and_read(self, tmp_path: Path) -> None:
        try:
            url = resolve_database_url(None, database="credits", state_dir=tmp_path)
        except EmbeddedPostgresError as exc:
            fail_or_skip("embedded PostgreSQL", exc)
        try:
            upgrade_database(url, MIGRATIONS_DIR)
            database = create_database(url)
            with database.engine.begin() as connection:
                connection.execute(text("INSERT INTO accounts (user_id) VALUES ('kept')"))
            database.dispose()
            stop_embedded_server(tmp_path)

            url_again = resolve_database_url(None, database="credits", state_dir=tmp_path)
            database = create_database(url_again)
            with database.engine.connect() as connection:
                users = connection.execute(text("SELECT user_id FROM accounts")).scalars().all()
            database.dispose()
            assert users == ["kept"]
        finally:
            stop_embedded_server(tmp_path)
