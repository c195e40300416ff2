"""The platform's migrations build exactly the tables its models declare, and run twice."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from gridweave_runtime.database import upgrade_database
from platform_service.app import MIGRATIONS_DIR
from platform_service.models import PlatformBase

pytestmark = pytest.mark.postgres


def test_the_migrated_schema_is_the_models(postgres_database: str) -> None:
    upgrade_database(postgres_database, MIGRATIONS_DIR)
    upgrade_database(postgres_database, MIGRATIONS_DIR)  # at head: nothing to do
    engine = create_engine(postgres_database)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection)
            differences = compare_metadata(context, PlatformBase.metadata)
    finally:
        engine.dispose()
    assert differences == []
