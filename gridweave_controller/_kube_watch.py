"""Watches over the official Kubernetes client: the streaming list call, read line by line.

The client's own ``kubernetes.watch.Watch`` helpers retry a 410 once on their own and
resume from versions they pick; the typed watch (:mod:`gridweave_controller.watch`) must
see every 410 to relist, so the stores stream the raw call
(``list_namespaced_custom_object(..., watch=True)``) and decode the events themselves.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import aiohttp
from urllib3 import BaseHTTPResponse
from urllib3.exceptions import HTTPError

from gridweave_controller._raw_watch import RawList
from gridweave_controller._watch_wire import LineSplitter, decode_event, read_timeout
from gridweave_controller.errors import (
    CrdError,
    TransportError,
    error_from_status,
    parse_status_body,
)

__all__ = [
    "AsyncKubeWatch",
    "KubeWatch",
    "answer_error",
    "raw_list",
    "read_timeout",
    "request_timeout",
    "watch_query",
]


def watch_query(
    label_selector: str | None,
    field_selector: str | None,
    resource_version: str | None,
    timeout_seconds: int | None,
    allow_bookmarks: bool,
) -> dict[str, Any]:
    """The keyword arguments of a streaming ``list_namespaced_custom_object`` call."""
    query: dict[str, Any] = {"watch": True, "allow_watch_bookmarks": allow_bookmarks}
    if label_selector:
        query["label_selector"] = label_selector
    if field_selector:
        query["field_selector"] = field_selector
    if resource_version:
        query["resource_version"] = resource_version
    if timeout_seconds is not None:
        query["timeout_seconds"] = timeout_seconds
    return query


def raw_list(answer: object) -> RawList:
    """A list answer's items and ``metadata.resourceVersion``; TransportError if malformed."""
    if not isinstance(answer, dict):
        raise TransportError(f"the Kubernetes API answered {type(answer).__name__}, not a list")
    items = answer.get("items")
    version = (answer.get("metadata") or {}).get("resourceVersion")
    if not isinstance(items, list) or not isinstance(version, str):
        raise TransportError("the Kubernetes API answered a list without items or version")
    return RawList(items, version)


def answer_error(code: int, body: bytes | None, reason: str = "") -> CrdError:
    """The error a non-2xx answer to a watch request names."""
    status = parse_status_body(body) or {"code": code, "message": reason or f"HTTP {code}"}
    return error_from_status(status, code, fallback=reason)


class KubeWatch:
    """A :class:`~gridweave_controller.store.RawWatch` over a urllib3 streaming response."""

    def __init__(self, response: object) -> None:
        if not isinstance(response, BaseHTTPResponse):
            raise TransportError(f"a watch answered {type(response).__name__}, not a stream")
        self._response = response
        self._events: deque[dict[str, Any]] = deque()
        self._lines = LineSplitter()
        self._chunks: Iterator[bytes] = response.stream(
            None if response.chunked else 2**16, decode_content=True
        )
        self._closed = False
        self._lock = threading.Lock()

    def __iter__(self) -> KubeWatch:
        return self

    def __next__(self) -> dict[str, Any]:
        while not self._events:
            if self._closed:
                raise StopIteration
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self._end()
                raise
            except (HTTPError, OSError, ValueError) as exc:
                if self._closed:  # closed from another thread while the read was blocked
                    raise StopIteration from None
                self.close()
                raise TransportError(f"the watch stream broke: {exc!r}") from exc
            self._events.extend(decode_event(line) for line in self._lines.feed(chunk))
        return self._events.popleft()

    def _end(self) -> None:
        # The server ended the stream cleanly: the connection can serve the next request.
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._response.release_conn()

    def close(self) -> None:
        """Shut the socket down (a read blocked in another thread returns) and drop it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._response.shutdown()
        except (OSError, ValueError, RuntimeError):
            pass  # never connected, or already released
        self._response.close()


class AsyncKubeWatch:
    """An :class:`~gridweave_controller.store.AsyncRawWatch` over an aiohttp response."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self._closed = False

    def __aiter__(self) -> AsyncKubeWatch:
        return self

    async def __anext__(self) -> dict[str, Any]:
        while not self._closed:
            try:
                line = await self._response.content.readline()
            except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
                await self.aclose()
                raise TransportError(f"the watch stream broke: {exc!r}") from exc
            if not line:
                await self.aclose()
                break
            if line.strip():
                return decode_event(line)
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Drop the connection."""
        if not self._closed:
            self._closed = True
            self._response.close()

    async def wire_chunks(self) -> AsyncGenerator[bytes, None]:
        """The stream's bytes as they arrive, cut after the last complete line; unparsed."""
        pending = b""
        try:
            async for chunk in self._response.content.iter_any():
                data = pending + chunk if pending else chunk
                cut = data.rfind(b"\n") + 1
                pending = data[cut:]
                if cut:
                    yield data[:cut]
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            raise TransportError(f"the watch stream broke: {exc!r}") from exc
        finally:
            await self.aclose()


def request_timeout(timeout_seconds: int | None) -> int:
    """The asyncio client's total request timeout for such a watch (whole seconds)."""
    return math.ceil(read_timeout(timeout_seconds))
