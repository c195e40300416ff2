"""Request limits every service gets by default: body size and time, in one ASGI middleware.

The server (``gridweave_runtime.server``) refuses an oversized or slow request *head*
(431, 408) before any of this runs; this middleware bounds the *body*:

- a body larger than the limit is refused with 413 ``request_too_large``: at once when
  ``Content-Length`` says so (nothing is read), else as soon as the bytes read pass it;
- a body that has not fully arrived ``body_timeout_seconds`` after the head is refused with
  408 ``request_timeout`` (a client dribbling its body holds nothing for long).

The whole body (at most the limit) is read here, then handed to the app, so a route never
waits on a slow client with a worker thread or a database connection in hand. Both answers
close the connection and are rendered by the app's own handler for
:class:`~gridweave_runtime.errors.GridweaveError`, so each service keeps its error format.
A route that legitimately takes larger bodies gets its own limit by path prefix
(``create_service_app(body_limits={"/v1/uploads": 64 * 2**20})``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gridweave_runtime.errors import GridweaveError, error_body

__all__ = [
    "BodyLimitMiddleware",
    "RequestTimedOut",
    "RequestTooLarge",
    "install_body_limits",
    "render_error",
]


class RequestTooLarge(GridweaveError):
    """The request body is larger than this route takes."""

    code = "request_too_large"
    status_code = 413
    message = "the request body is too large"


class RequestTimedOut(GridweaveError):
    """The request did not arrive in time (a slow or stalled client)."""

    code = "request_timeout"
    status_code = 408
    message = "the request did not arrive in time"


async def render_error(
    owner: FastAPI, error: GridweaveError, scope: Scope, receive: Receive, send: Send
) -> None:
    """Answer ``error`` with ``owner``'s own handler and close the connection after it."""
    handlers = owner.exception_handlers
    handler = next((handlers[k] for k in type(error).__mro__ if k in handlers), None)
    response: Any
    if handler is None:
        body = error_body(error.code, error.message, **error.details)
        response = JSONResponse(body, status_code=error.status_code)
    else:
        response = handler(Request(scope, receive), error)
        if inspect.isawaitable(response):
            response = await response
    response.headers["connection"] = "close"
    await response(scope, receive, send)


def _declared_length(headers: Headers) -> int | None:
    """The ``Content-Length`` announced, None when absent (chunked) or unreadable."""
    value = headers.get("content-length")
    if value is None or not value.isdigit():
        return None
    return int(value)


class BodyLimitMiddleware:
    """413 for a body past its route's limit, 408 for one that does not arrive in time."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        owner: FastAPI,
        max_body_bytes: int,
        body_timeout_seconds: float,
        body_limits: Mapping[str, int],
    ) -> None:
        self.app = app
        self.owner = owner
        self.max_body_bytes = max_body_bytes
        self.body_timeout_seconds = body_timeout_seconds
        # longest prefix first, so "/v1/a/b" wins over "/v1/a"
        self.body_limits = sorted(body_limits.items(), key=lambda item: -len(item[0]))

    def limit_for(self, path: str) -> int:
        """The largest body accepted on ``path``."""
        for prefix, limit in self.body_limits:
            if path.startswith(prefix):
                return limit
        return self.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = _declared_length(headers)
        if declared == 0 or (declared is None and "transfer-encoding" not in headers):
            await self.app(scope, receive, send)  # no body: nothing to bound
            return
        limit = self.limit_for(scope["path"])
        if declared is not None and declared > limit:
            error = RequestTooLarge(max_bytes=limit, declared_bytes=declared)
            await render_error(self.owner, error, scope, receive, send)
            return
        body = await self._read_body(scope, receive, send, limit)
        if body is None:
            return  # refused and answered
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(
        self, scope: Scope, receive: Receive, send: Send, limit: int
    ) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        error: GridweaveError | None = None
        with anyio.move_on_after(self.body_timeout_seconds) as deadline:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None  # the client left: nobody to answer
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    error = RequestTooLarge(max_bytes=limit)
                    break
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if deadline.cancelled_caught:
            timeout = math.ceil(self.body_timeout_seconds)
            error = RequestTimedOut(timeout_seconds=timeout)
        if error is not None:
            await render_error(self.owner, error, scope, receive, send)
            return None
        return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body read already, then the client's events."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()  # e.g. http.disconnect, for a streaming answer
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def install_body_limits(
    app: FastAPI,
    *,
    max_body_bytes: int,
    body_timeout_seconds: float,
    body_limits: Mapping[str, int] | None = None,
) -> None:
    """Bound every request body of ``app`` (per path prefix where ``body_limits`` says)."""
    app.add_middleware(
        BodyLimitMiddleware,
        owner=app,
        max_body_bytes=max_body_bytes,
        body_timeout_seconds=body_timeout_seconds,
        body_limits=dict(body_limits or {}),
    )
