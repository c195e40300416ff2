"""A service's clients of other services: kept in app state, closed when the app stops."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from fastapi import FastAPI, Request

__all__ = ["install_client", "state_dependency"]

T = TypeVar("T")


def install_client(app: FastAPI, name: str, client: object) -> None:
    """Keep ``client`` in ``app.state.<name>``; close (or aclose) it when the app stops."""
    setattr(app.state, name, client)
    inner_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(wrapped: FastAPI) -> AsyncIterator[None]:
        try:
            async with inner_lifespan(wrapped):
                yield
        finally:
            closing = getattr(client, "aclose", None) or getattr(client, "close", None)
            if closing is not None:
                result = closing()
                if inspect.isawaitable(result):
                    await result

    app.router.lifespan_context = lifespan


def state_dependency(name: str, kind: type[T]) -> Callable[[Request], Awaitable[T]]:
    """A FastAPI dependency reading ``app.state.<name>`` (async: no worker-thread hop)."""

    async def dependency(request: Request) -> T:
        value = getattr(request.app.state, name)
        if not isinstance(value, kind):
            raise TypeError(f"app.state.{name} is not a {kind.__name__}")
        return value

    dependency.__name__ = f"{name}_dependency"
    return dependency
