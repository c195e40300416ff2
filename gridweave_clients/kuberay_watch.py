"""The proxied transport's watch: kuberay-service's ``/v1/crd/watch`` and ``/v1/crd/list``.

:class:`ProxiedWatchSource` (blocking) and :class:`AsyncProxiedWatchSource` are
:class:`~gridweave_controller.store.RawWatchSource` s over HTTP, so the typed watch
(:mod:`gridweave_controller.watch`: list, watch, relist on 410, reconnect) runs unchanged
on them::

    source = ProxiedWatchSource("http://127.0.0.1:8800", token)
    with watch_jobs(source, "") as events:     # the namespace is kuberay-service's own
        for event in events:
            ...

A watch's events are read from the newline-delimited JSON stream as they arrive; an
``ERROR`` event raises the error its Status names (``Expired`` for 410), a refused or reset
connection raises :class:`~gridweave_controller.errors.TransportError` with no HTTP code,
which the typed watch retries with backoff from the last resourceVersion it handed out:
a watch outlives a restart of kuberay-service. A Status answer before the stream starts
raises the error it names. The ``namespace`` argument is ignored: kuberay-service serves
its own (``KUBERAY_NAMESPACE``).
"""

from __future__ import annotations

import socket
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from gridweave_controller._watch_wire import LineSplitter, decode_event, read_timeout
from gridweave_controller.errors import (
    CrdError,
    TransportError,
    error_from_status,
    parse_status_body,
)
from gridweave_controller.store import ENDPOINTS, JOBS, RawList

__all__ = ["AsyncProxiedWatch", "AsyncProxiedWatchSource", "ProxiedWatch", "ProxiedWatchSource"]

_SEGMENTS = {JOBS: "jobs", ENDPOINTS: "endpoints"}
_CONNECT_TIMEOUT_S = 5.0


def _base(base_url: str) -> str:
    return base_url.rstrip("/") + "/v1/crd"


def _headers(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "User-Agent": "gridweave-crd-watch",
    }


def _segment(plural: str) -> str:
    try:
        return _SEGMENTS[plural]
    except KeyError:
        raise TransportError(f"kuberay-service serves no watch of {plural!r}") from None


def _params(**values: Any) -> dict[str, str]:
    query: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        query[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return query


def _watch_params(
    label_selector: str | None,
    field_selector: str | None,
    resource_version: str | None,
    timeout_seconds: int | None,
    allow_bookmarks: bool,
) -> dict[str, str]:
    return _params(
        labelSelector=label_selector,
        fieldSelector=field_selector,
        resourceVersion=resource_version,
        timeoutSeconds=timeout_seconds,
        allowWatchBookmarks=allow_bookmarks,
    )


def _watch_timeout(timeout_seconds: int | None) -> httpx.Timeout:
    return httpx.Timeout(read_timeout(timeout_seconds), connect=_CONNECT_TIMEOUT_S)


def _refusal(response: httpx.Response) -> CrdError:
    """The error a non-2xx answer names (its Status, else the bare HTTP code)."""
    status = parse_status_body(response.content) or {"code": response.status_code}
    return error_from_status(status, response.status_code, fallback=response.reason_phrase)


def _unreachable(exc: Exception) -> TransportError:
    return TransportError(f"kuberay-service could not be reached: {exc!r}")


def _raw_list(response: httpx.Response) -> RawList:
    if response.status_code != 200:
        raise _refusal(response)
    try:
        body = response.json()
        return RawList(body["items"], body["metadata"]["resourceVersion"])
    except (ValueError, KeyError, TypeError) as exc:
        raise TransportError(f"kuberay-service answered a malformed list: {exc!r}") from exc


def _shut_down(response: httpx.Response) -> None:
    """Shut the response's socket down, so a read blocked on it (in any thread) returns."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class ProxiedWatch:
    """A :class:`~gridweave_controller.store.RawWatch` over a streaming httpx response."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._chunks: Iterator[bytes] = response.iter_raw()
        self._lines = LineSplitter()
        self._events: deque[dict[str, Any]] = deque()
        self._closed = False
        self._lock = threading.Lock()

    def __iter__(self) -> ProxiedWatch:
        return self

    def __next__(self) -> dict[str, Any]:
        while not self._events:
            if self._closed:
                raise StopIteration
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self.close()
                raise
            except (httpx.HTTPError, httpx.StreamError, OSError) as exc:
                if self._closed:
                    raise StopIteration from None
                self.close()
                raise TransportError(
                    f"the watch stream from kuberay-service broke: {exc!r}"
                ) from exc
            self._events.extend(decode_event(line) for line in self._lines.feed(chunk))
        return self._events.popleft()

    def close(self) -> None:
        """End the stream; a read blocked in another thread returns."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _shut_down(self._response)
        self._response.close()


class ProxiedWatchSource:
    """List and watch through kuberay-service over HTTP (blocking, one pooled client)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._client = httpx.Client(
            base_url=_base(base_url),
            headers=_headers(token),
            timeout=httpx.Timeout(timeout, connect=_CONNECT_TIMEOUT_S),
            transport=transport,
            trust_env=False,
        )

    def close(self) -> None:
        """Close the pooled connections."""
        self._client.close()

    def list_page(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> RawList:
        """The raw list and its resourceVersion (``GET /v1/crd/list/...``)."""
        params = _params(labelSelector=label_selector, fieldSelector=field_selector)
        try:
            response = self._client.get(f"/list/{_segment(plural)}", params=params)
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from exc
        return _raw_list(response)

    def watch(
        self,
        namespace: str,
        plural: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
    ) -> ProxiedWatch:
        """Open the stream (``GET /v1/crd/watch/...``); its answer checked before any event."""
        request = self._client.build_request(
            "GET",
            f"/watch/{_segment(plural)}",
            params=_watch_params(
                label_selector, field_selector, resource_version, timeout_seconds, allow_bookmarks
            ),
            timeout=_watch_timeout(timeout_seconds),
        )
        try:
            response = self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from exc
        if response.status_code != 200:
            try:
                response.read()
            except httpx.HTTPError as exc:
                raise _unreachable(exc) from exc
            finally:
                response.close()
            raise _refusal(response)
        return ProxiedWatch(response)


class AsyncProxiedWatch:
    """An :class:`~gridweave_controller.store.AsyncRawWatch` over a streaming httpx response."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._chunks: AsyncIterator[bytes] = response.aiter_raw()
        self._lines = LineSplitter()
        self._events: deque[dict[str, Any]] = deque()
        self._closed = False

    def __aiter__(self) -> AsyncProxiedWatch:
        return self

    async def __anext__(self) -> dict[str, Any]:
        while not self._events:
            if self._closed:
                raise StopAsyncIteration
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                await self.aclose()
                raise
            except (httpx.HTTPError, httpx.StreamError, OSError) as exc:
                if self._closed:
                    raise StopAsyncIteration from None
                await self.aclose()
                raise TransportError(
                    f"the watch stream from kuberay-service broke: {exc!r}"
                ) from exc
            self._events.extend(decode_event(line) for line in self._lines.feed(chunk))
        return self._events.popleft()

    async def aclose(self) -> None:
        """End the stream; a read pending in another task returns."""
        if self._closed:
            return
        self._closed = True
        _shut_down(self._response)
        await self._response.aclose()


class AsyncProxiedWatchSource:
    """:class:`ProxiedWatchSource` under asyncio (one pooled ``httpx.AsyncClient``)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._client = httpx.AsyncClient(
            base_url=_base(base_url),
            headers=_headers(token),
            timeout=httpx.Timeout(timeout, connect=_CONNECT_TIMEOUT_S),
            transport=transport,
            trust_env=False,
        )

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._client.aclose()

    async def list_page(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> RawList:
        """The raw list and its resourceVersion (``GET /v1/crd/list/...``)."""
        params = _params(labelSelector=label_selector, fieldSelector=field_selector)
        try:
            response = await self._client.get(f"/list/{_segment(plural)}", params=params)
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from exc
        return _raw_list(response)

    async def watch(
        self,
        namespace: str,
        plural: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
    ) -> AsyncProxiedWatch:
        """Open the stream (``GET /v1/crd/watch/...``); its answer checked before any event."""
        request = self._client.build_request(
            "GET",
            f"/watch/{_segment(plural)}",
            params=_watch_params(
                label_selector, field_selector, resource_version, timeout_seconds, allow_bookmarks
            ),
            timeout=_watch_timeout(timeout_seconds),
        )
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from exc
        if response.status_code != 200:
            try:
                await response.aread()
            except httpx.HTTPError as exc:
                raise _unreachable(exc) from exc
            finally:
                await response.aclose()
            raise _refusal(response)
        return AsyncProxiedWatch(response)
