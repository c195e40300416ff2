"""Database engines, sessions and migrations (SQLAlchemy 2 on psycopg 3).

One transaction per request: :func:`session_dependency` hands a router a session; query
helpers ``flush``; the service function ``commit``\\s. Whatever is left uncommitted when the
request ends is rolled back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from anyio import CapacityLimiter, to_thread
from fastapi import Request
from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import Session, sessionmaker

__all__ = [
    "Database",
    "create_database",
    "session_dependency",
    "upgrade_database",
]


@dataclass(frozen=True)
class Database:
    """An engine and the session factory bound to it."""

    engine: Engine
    sessions: sessionmaker[Session]

    def session(self) -> Session:
        """A new session (one transaction per request)."""
        return self.sessions()

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def create_database(
    url: str, *, pool_size: int = 20, max_overflow: int = 20, pre_ping: bool = False
) -> Database:
    """An engine for ``url`` (``postgresql+psycopg://``) and its session factory."""
    engine = create_engine(
        url,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_pre_ping=pre_ping,
        pool_recycle=1800,
        pool_timeout=30,
    )
    return Database(engine=engine, sessions=sessionmaker(engine, expire_on_commit=False))


def upgrade_database(url: str, migrations_dir: Path) -> None:
    """Run ``alembic upgrade head`` for the migrations in ``migrations_dir`` against ``url``."""
    config = Config()
    config.set_main_option("script_location", str(migrations_dir))
    config.set_main_option("path_separator", "os")
    # passed as an attribute, not an ini option, so '%' in passwords needs no escaping
    config.attributes["database_url"] = url
    command.upgrade(config, "head")


async def session_dependency(request: Request) -> AsyncIterator[Session]:
    """FastAPI dependency: a session from ``app.state.database``, rolled back if uncommitted.

    ``async`` so FastAPI keeps it on the event loop (a sync generator costs two worker-thread
    hops per request); creating a session does no I/O. Closing one talks to the server only
    when something was left uncommitted (the error path); that rollback runs on a thread of
    its own, never waiting for the shared pool, whose threads may all be blocked on the very
    row locks this rollback releases.
    """
    database: Database = request.app.state.database
    session = database.session()
    try:
        yield session
    finally:
        if session.in_transaction():
            await to_thread.run_sync(session.close, limiter=CapacityLimiter(1))
        else:
            session.close()
