"""The HTTP server every service runs under: uvicorn with the request-head limits.

uvicorn's httptools protocol buffers a request head of any size, for any time, before the
app sees it: a 96 MiB header took 14 s of the event loop and 190 MB of memory. The protocol
here refuses, before any app code (auth included) runs:

- a head (request line + headers) past ``max_header_bytes``: 431, the rest never read;
- more than ``max_header_count`` headers: 431;
- a head not complete ``header_timeout_seconds`` after its first byte (or after the
  connection opened): 408, so a slowloris client holds a socket for that long at most.

Each answer closes the connection. Bodies are bounded by ``gridweave_runtime.limits``.
"""

from __future__ import annotations

import asyncio
import json
from asyncio import TimerHandle
from typing import Any, ClassVar

import uvicorn
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from gridweave_runtime.errors import error_body
from gridweave_runtime.settings import ServiceSettings

__all__ = ["HeadLimits", "LimitedHttpProtocol", "limited_protocol", "server_config"]


class HeadLimits:
    """The limits on a request head: its size, its number of headers, its time."""

    def __init__(self, *, max_bytes: int, max_count: int, timeout_seconds: float) -> None:
        self.max_bytes = max_bytes
        self.max_count = max_count
        self.timeout_seconds = timeout_seconds


class _HeadRefused(Exception):
    """Raised inside a parser callback to stop parsing a head that broke a limit."""


def _refusal(status: int, code: str, message: str, **details: Any) -> bytes:
    body = json.dumps(error_body(code, message, **details), separators=(",", ":")).encode()
    return b"".join(
        [
            STATUS_LINE[status],
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"connection: close\r\n\r\n",
            body,
        ]
    )


class LimitedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bounded request head (size, count, time)."""

    limits: ClassVar[HeadLimits]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._head_count = 0
        self._reading_head = True
        self._head_timer: TimerHandle | None = None
        self._refused: bytes | None = None

    # -- the head's time ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _start_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(
                self.limits.timeout_seconds, self._head_timed_out
            )

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self._reading_head or self.transport.is_closing():
            return
        if self._head_bytes == 0:
            self.transport.close()  # an idle connection: nobody to answer
            return
        self._refuse(
            _refusal(
                408,
                "request_timeout",
                "the request head did not arrive in time",
                timeout_seconds=self.limits.timeout_seconds,
            )
        )

    # -- the head's size ---------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if not self._reading_head:
            super().data_received(data)
            return
        room = self.limits.max_bytes - self._head_bytes
        allowed = data[:room]
        self._head_bytes += len(allowed)
        super().data_received(allowed)
        if len(allowed) == len(data) or self.transport.is_closing():
            return
        if self._reading_head:
            self._refuse(
                _refusal(
                    431,
                    "request_head_too_large",
                    "the request line and headers are too large",
                    max_bytes=self.limits.max_bytes,
                )
            )
            return
        super().data_received(data[len(allowed) :])  # the head ended inside the allowance

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._head_count = 0
        self._start_head_timer()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_count += 1
        if self._head_count > self.limits.max_count:
            self._refused = _refusal(
                431,
                "too_many_headers",
                "the request has too many headers",
                max_headers=self.limits.max_count,
            )
            raise _HeadRefused()  # the parser stops; send_400_response sends this instead
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._head_bytes = 0
        self._stop_head_timer()
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if self._refused is not None:
            self._refuse(self._refused)
            return
        super().send_400_response(msg)

    def _refuse(self, answer: bytes) -> None:
        self._stop_head_timer()
        self.transport.write(answer)
        self.transport.close()


def limited_protocol(limits: HeadLimits) -> type[LimitedHttpProtocol]:
    """The protocol class uvicorn instantiates per connection, bound to ``limits``."""
    return type("GridweaveHttpProtocol", (LimitedHttpProtocol,), {"limits": limits})


def server_config(app: Any, settings: ServiceSettings, **overrides: Any) -> uvicorn.Config:
    """uvicorn's configuration of a service: host, port, the head limits, keep-alive.

    ``X-Forwarded-For`` is not believed (``proxy_headers=False``): a caller's address is the
    connection's, and the platform names an end user's address in a header of its own,
    trusted only with its service token.
    """
    limits = HeadLimits(
        max_bytes=settings.max_header_bytes,
        max_count=settings.max_header_count,
        timeout_seconds=settings.header_timeout_seconds,
    )
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "access_log": settings.access_log,
        "proxy_headers": False,
        "http": limited_protocol(limits),
        "timeout_keep_alive": settings.keep_alive_seconds,
        **overrides,
    }
    return uvicorn.Config(app, **options)
