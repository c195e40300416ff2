"""Loopback networking for tests: a free port, and an ASGI app served on one in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp

from gridweave_runtime.server import server_config
from gridweave_runtime.settings import ServiceSettings

START_TIMEOUT_S = 30.0


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    (port,) = free_ports(1)
    return port


def free_ports(count: int) -> list[int]:
    """``count`` different TCP ports on loopback that nothing listens on right now (each
    held while the next is picked, so the kernel never hands out one twice)."""
    with ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


@contextmanager
def serve_in_thread(
    app: ASGIApp, settings: ServiceSettings | None = None, *, port: int | None = None
) -> Iterator[str]:
    """Run ``app`` under uvicorn on 127.0.0.1 and yield its base URL; stop it on exit.

    With ``settings``, under the configuration ``serve()`` gives a service (its request
    limits included), on ``port`` or a free port of loopback.
    """
    port = port or free_port()
    options: dict[str, Any] = {"port": port, "log_level": "warning", "lifespan": "on"}
    if settings is None:
        config = uvicorn.Config(app, host="127.0.0.1", **options)
    else:
        config = server_config(app, settings, host="127.0.0.1", **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on port {port}")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@contextmanager
def running_service(
    app: FastAPI, headers: Mapping[str, str], *, port: int | None = None
) -> Iterator[httpx.Client]:
    """A Gridweave service on a loopback port; yields a client sending ``headers``.

    Served as ``serve()`` would (its settings' request limits included). The service's
    database pool is disposed of on exit, even if the server never started.
    """
    try:
        with (
            serve_in_thread(app, app.state.settings, port=port) as url,
            httpx.Client(base_url=url, headers=dict(headers), timeout=60) as client,
        ):
            yield client
    finally:
        database = getattr(app.state, "database", None)
        if database is not None:
            database.dispose()
