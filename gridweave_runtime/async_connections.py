"""Event-loop connections for the hottest routes, beside the SQLAlchemy pool.

credit_service's settlement and metering's first usage report run on the event loop with
psycopg's async connections instead of a worker thread with an ORM session: the thread hop,
the session and the pool's bookkeeping cost the server more CPU than the route's SQL.

Connections are opened on first use, kept for reuse, and closed when the service's
SQLAlchemy engine is disposed of (at shutdown), so they live exactly as long as that pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from psycopg import AsyncConnection
from psycopg.pq import TransactionStatus
from sqlalchemy import Engine, event
from sqlalchemy.engine import make_url

__all__ = ["AsyncConnections", "install_async_connections", "open_async_connections"]


class AsyncConnections:
    """At most ``size`` reusable async connections to one database."""

    def __init__(self, conninfo: str, *, size: int) -> None:
        self._conninfo = conninfo
        self._size = size
        self._idle: list[AsyncConnection] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots = asyncio.Semaphore(size)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """A connection inside a transaction: committed on exit, rolled back on an error."""
        self._bind_to_running_loop()
        async with self._slots:
            connection = self._idle.pop() if self._idle else await self._connect()
            try:
                async with connection.transaction():
                    yield connection
            except BaseException:
                # the transaction was rolled back, unless the error was the connection itself
                if connection.info.transaction_status == TransactionStatus.IDLE:
                    self._idle.append(connection)
                else:
                    await connection.close()
                raise
            self._idle.append(connection)

    def close(self) -> None:
        """Close every idle connection (synchronous: it may run after the event loop ended)."""
        while self._idle:
            connection = self._idle.pop()  # held while finishing: its __del__ warns if open
            connection.pgconn.finish()

    async def _connect(self) -> AsyncConnection:
        return await AsyncConnection.connect(self._conninfo)

    def _bind_to_running_loop(self) -> None:
        # connections belong to the loop that opened them; a new loop starts afresh
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self.close()
            self._loop = loop
            self._slots = asyncio.Semaphore(self._size)


def open_async_connections(engine: Engine, *, size: int) -> AsyncConnections:
    """Async connections to ``engine``'s database, closed whenever the engine is disposed of."""
    conninfo = make_url(engine.url).set(drivername="postgresql").render_as_string(False)
    connections = AsyncConnections(conninfo, size=size)
    event.listen(engine, "engine_disposed", lambda _: connections.close())
    return connections


def install_async_connections(app: FastAPI, *, size: int) -> None:
    """``app.state.async_connections``: at most ``size`` connections to the database of the
    app's SQLAlchemy engine (``app.state.database``), closed with its pool at shutdown."""
    app.state.async_connections = open_async_connections(app.state.database.engine, size=size)
