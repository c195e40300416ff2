"""A reverse proxy whose answers wait: the service has done the work, the caller never hears.

``held_answers(target)`` serves a proxy on a loopback port. Each request is forwarded to
``target`` at once (so the service applies it), and its answer is held back until
:meth:`HeldAnswers.release` (or the proxy stops): the window in which a caller that crashes
or gives up has caused an effect it never learned about.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from starlette.types import Receive, Scope, Send

from tests.support.asgi_proxy import forward, request_body, send_answer
from tests.support.http_server import serve_in_thread

__all__ = ["HeldAnswers", "held_answers"]

_POLL_S = 0.02


class HeldAnswers:
    """The ASGI proxy: forwards every request, holds every answer until released."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.forwarded = 0  # requests the service has answered (the proxy holds the answers)
        self._released = threading.Event()
        self._lock = threading.Lock()

    def release(self) -> None:
        """Let every held and later answer through."""
        self._released.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        answer = await forward(self.target, scope, await request_body(receive))
        with self._lock:
            self.forwarded += 1
        while not self._released.is_set():
            await asyncio.sleep(_POLL_S)
        await send_answer(send, answer.status_code, answer.content, answer.headers)


@contextmanager
def held_answers(target: str) -> Iterator[tuple[str, HeldAnswers]]:
    """The proxy in front of ``target`` on a loopback port: (its URL, the proxy)."""
    proxy = HeldAnswers(target)
    with serve_in_thread(proxy) as url:
        try:
            yield url, proxy
        finally:
            proxy.release()  # uvicorn waits for the open answers before it stops
