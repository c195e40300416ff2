"""The parts of a test's reverse proxy (an ASGI app in front of a real service): read the
request, forward it, send an answer back. The proxies differ only in what they do between."""

from __future__ import annotations

import httpx
from starlette.types import Receive, Scope, Send

__all__ = ["forward", "request_body", "send_answer"]

#: Headers the proxy's server sets itself (the body's length) or that end with the hop.
_HOP_HEADERS = frozenset({"content-length", "transfer-encoding", "connection"})


async def request_body(receive: Receive) -> bytes:
    """The whole body of the request being received."""
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


async def forward(target: str, scope: Scope, body: bytes) -> httpx.Response:
    """The request of ``scope`` with ``body``, sent to ``target``; its answer."""
    headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k.lower() != b"host"]
    url = f"{target}{scope['path']}"
    if scope.get("query_string"):
        url += "?" + scope["query_string"].decode()
    async with httpx.AsyncClient(timeout=60) as client:
        return await client.request(scope["method"], url, content=body, headers=headers)


async def send_answer(
    send: Send, status: int, content: bytes, headers: httpx.Headers | None = None
) -> None:
    """Answer ``status`` with ``content`` and ``headers`` (those of one hop left out)."""
    kept = [
        (k.encode(), v.encode())
        for k, v in (headers or httpx.Headers()).items()
        if k.lower() not in _HOP_HEADERS
    ]
    kept.append((b"content-length", str(len(content)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": kept})
    await send({"type": "http.response.body", "body": content})
