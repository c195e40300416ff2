"""A service's background tasks: run on its event loop while it serves, cancelled after."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager, suppress
from typing import Any

from fastapi import FastAPI

__all__ = ["install_task"]


def install_task(app: FastAPI, name: str, start: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``start()`` as a task of ``app``'s loop while it serves, cancelled at shutdown."""
    inner_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(wrapped: FastAPI) -> AsyncIterator[None]:
        async with inner_lifespan(wrapped):
            task = asyncio.create_task(start(), name=name)
            try:
                yield
            finally:
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task

    app.router.lifespan_context = lifespan
