"""The faucet migrations upgrade an empty database, and running them again is harmless."""

from __future__ import annotations

from sqlalchemy import create_engine, inspect

from faucet_service.app import MIGRATIONS_DIR
from gridweave_runtime.database import upgrade_database


def test_upgrade_creates_the_faucet_tables_on_an_empty_database(postgres_database: str) -> None:
    upgrade_database(postgres_database, MIGRATIONS_DIR)
    upgrade_database(postgres_database, MIGRATIONS_DIR)

    engine = create_engine(postgres_database)
    try:
        tables = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert tables == {
        "alembic_version",
        "verifications",
        "sign_in_codes",
        "grants",
        "refills",
        "rate_limit_hits",
        "outbox_messages",
    }
