"""The metering migrations upgrade an empty database, and running them again is harmless."""

from __future__ import annotations

from sqlalchemy import create_engine, inspect

from gridweave_runtime.database import upgrade_database
from metering_service.app import MIGRATIONS_DIR


def test_upgrade_creates_the_usage_table_on_an_empty_database(postgres_database: str) -> None:
    upgrade_database(postgres_database, MIGRATIONS_DIR)
    upgrade_database(postgres_database, MIGRATIONS_DIR)

    engine = create_engine(postgres_database)
    try:
        inspector = inspect(engine)
        tables = set(inspector.get_table_names())
        constraints = {c["name"] for c in inspector.get_unique_constraints("usage_records")}
    finally:
        engine.dispose()
    assert tables == {"alembic_version", "usage_records", "receipt_outbox"}
    assert "uq_usage_records_hold_reference" in constraints
