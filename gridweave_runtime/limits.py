"""Request limits every service gets by default: body size and time, in two ASGI layers.

The server (``gridweave_runtime.server``) refuses an oversized or slow request *head*
(431, 408) before any of this runs; these bound the *body*:

- ``BodyGuardMiddleware`` (outside auth) answers 413 ``request_too_large`` at once when
  ``Content-Length`` announces more than the route takes (nothing is read, no token
  needed to be refused), and closes the connection after any answer given before the body
  was read (a 401, say): the server then never reads the rest of a body nobody wants;
- ``BodyReaderMiddleware`` (inside auth) reads the whole body before the route runs: 413 as
  soon as the bytes read pass the limit (a chunked body), 408 ``request_timeout`` when the
  body has not arrived ``body_timeout_seconds`` after the head. So a route never waits on a
  slow client with a worker thread or a database connection in hand.

Both answers close the connection and are rendered by the app's own handler for
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
    "BodyGuardMiddleware",
    "BodyLimits",
    "BodyReaderMiddleware",
    "RequestTimedOut",
    "RequestTooLarge",
    "install_body_guard",
    "install_body_reader",
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


def _has_body(headers: Headers) -> bool:
    declared = _declared_length(headers)
    return declared != 0 and (declared is not None or "transfer-encoding" in headers)


class BodyLimits:
    """The largest body per path: by the longest matching prefix, else the default."""

    def __init__(self, default: int, by_prefix: Mapping[str, int] | None = None) -> None:
        self.default = default
        # longest prefix first, so "/v1/a/b" wins over "/v1/a"
        self.by_prefix = sorted((by_prefix or {}).items(), key=lambda item: -len(item[0]))

    def limit_for(self, path: str) -> int:
        """The largest body accepted on ``path``."""
        for prefix, limit in self.by_prefix:
            if path.startswith(prefix):
                return limit
        return self.default


class BodyGuardMiddleware:
    """413 for an announced body past the limit; ``Connection: close`` when a body is unread."""

    def __init__(self, app: ASGIApp, *, owner: FastAPI, limits: BodyLimits) -> None:
        self.app = app
        self.owner = owner
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not _has_body(headers):
            await self.app(scope, receive, send)
            return
        limit = self.limits.limit_for(scope["path"])
        declared = _declared_length(headers)
        if declared is not None and declared > limit:
            error = RequestTooLarge(max_bytes=limit, declared_bytes=declared)
            await render_error(self.owner, error, scope, receive, send)
            return
        body_read = False

        async def noting_receive() -> Message:
            nonlocal body_read
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_read = True
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not body_read:
                # answered before the body was read: the server must not read it after
                message["headers"] = [*message.get("headers", []), (b"connection", b"close")]
            await send(message)

        await self.app(scope, noting_receive, closing_send)


class BodyReaderMiddleware:
    """Reads the whole body before the route: 413 past the limit, 408 past the time."""

    def __init__(
        self, app: ASGIApp, *, owner: FastAPI, limits: BodyLimits, timeout_seconds: float
    ) -> None:
        self.app = app
        self.owner = owner
        self.limits = limits
        self.timeout_seconds = timeout_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(Headers(scope=scope)):
            await self.app(scope, receive, send)  # no body: nothing to bound
            return
        body = await self._read_body(scope, receive, send, self.limits.limit_for(scope["path"]))
        if body is None:
            return  # refused and answered
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(
        self, scope: Scope, receive: Receive, send: Send, limit: int
    ) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        error: GridweaveError | None = None
        with anyio.move_on_after(self.timeout_seconds) as deadline:
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
            error = RequestTimedOut(timeout_seconds=math.ceil(self.timeout_seconds))
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


def install_body_reader(app: FastAPI, *, limits: BodyLimits, timeout_seconds: float) -> None:
    """Read every body before its route, bounded in size and time (install before auth)."""
    app.add_middleware(
        BodyReaderMiddleware, owner=app, limits=limits, timeout_seconds=timeout_seconds
    )


def install_body_guard(app: FastAPI, *, limits: BodyLimits) -> None:
    """Refuse announced oversized bodies unread; close after unread ones (install after auth)."""
    app.add_middleware(BodyGuardMiddleware, owner=app, limits=limits)
