"""The body of every service's ``migrations/env.py``: online migrations from a URL.

A service's ``env.py`` passes its own metadata in (the runtime imports no service)::

    from <service>.models import <Service>Base
    from gridweave_runtime.migrations_env import run_migrations
    run_migrations(<Service>Base.metadata)
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import MetaData, create_engine, pool, text

__all__ = ["run_migrations"]

_LOCK_KEY = 0x67726964  # "grid": the advisory lock taken while migrating


def run_migrations(target_metadata: MetaData) -> None:
    """Upgrade the database at ``config.attributes['database_url']`` (or ``sqlalchemy.url``)."""
    config = context.config
    url = config.attributes.get("database_url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL given to the migrations")
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=target_metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            context.configure(connection=connection, target_metadata=target_metadata)
            with context.begin_transaction():
                # two replicas starting together must not both run the same migration
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
                context.run_migrations()
    finally:
        engine.dispose()
