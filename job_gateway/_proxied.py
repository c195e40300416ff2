"""The proxied clients: every typed operation sent to kuberay-service's ``/v1/crd``.

:class:`ProxiedClient` (blocking) and :class:`AsyncProxiedClient` inherit the operations
(:mod:`gridweave_controller.operations`) and send each call as the request its declaration
names (:func:`gridweave_controller.wire.request_for`); the answer becomes the typed result
or the controller's own exception (:func:`gridweave_controller.wire.result_from`). An
operation without a route (``wait_for_job``) runs its flow here, its reads sent as routed
reads.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any, NoReturn, TypeVar, cast

import httpx

from gridweave_controller._flow import FlowContext, run_flow, run_flow_async
from gridweave_controller._kubeconfig import DEFAULT_NAMESPACE
from gridweave_controller.errors import Invalid, TransportError
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.operations import (
    AsyncRunner,
    BlockingRunner,
    Operation,
    Operations,
)
from gridweave_controller.store import ENDPOINTS, JOBS, AsyncRawStore, RawStore
from gridweave_controller.wire import PREFIX, WireRequest, request_for, result_from

__all__ = ["DEFAULT_URL", "TOKEN_ENV", "URL_ENV", "AsyncProxiedClient", "ProxiedClient"]

URL_ENV = "KUBERAY_URL"
TOKEN_ENV = "GRIDWEAVE_INTERNAL_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8800"
#: Connect attempts for any call (nothing was sent yet, so any call may be repeated).
CONNECT_RETRIES = 3
#: Attempts for reads after a timeout or a dropped connection.
READ_ATTEMPTS = 3
_RETRY_BACKOFF_S = 0.05
#: A request's headers and body go out in two writes; without TCP_NODELAY, Nagle's algorithm
#: holds the body back until the headers are acknowledged.
_SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
_LIMITS = httpx.Limits(max_connections=64, max_keepalive_connections=32)
_RETRIABLE = (httpx.TimeoutException, httpx.RemoteProtocolError, httpx.ReadError)
#: The namespace is kuberay-service's: a composed flow's reads go through routes that
#: ignore this one.
_COMPOSED = FlowContext(DEFAULT_NAMESPACE)
_ROUTED_GETS: dict[str, Operation[..., Any]] = {
    JOBS: Operations.get_job,
    ENDPOINTS: Operations.get_endpoint,
}
_T = TypeVar("_T")


def _headers(token: str) -> dict[str, str]:
    if not token:
        raise Invalid(f"{TOKEN_ENV} is required to call kuberay-service", field=TOKEN_ENV)
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "User-Agent": "gridweave-crd-client",
    }


def _httpx_request(
    base_url: str, headers: Mapping[str, str], timeout: httpx.Timeout, request: WireRequest
) -> httpx.Request:
    return httpx.Request(
        request.method,
        base_url + request.path,
        params=request.params,
        headers=headers,
        json=request.json,
        extensions={"timeout": timeout.as_dict()},
    )


def _failed(request: WireRequest, exc: Exception) -> NoReturn:
    raise TransportError(f"kuberay-service {request.method} {request.path}: {exc!r}") from exc


class ProxiedClient(Operations, BlockingRunner):
    """The typed operations over one pooled HTTP connection to kuberay-service's ``/v1/crd``.

    Created unconnected; the first call connects from the environment unless
    :meth:`connect` was called. Requests go straight to httpx's ``HTTPTransport`` (the
    connection pool, keep-alive, connect retries, timeouts): the ``httpx.Client`` layer
    above it (cookies, redirects, auth flows, hooks) does nothing for this internal JSON API
    and costs about 0.17 ms of CPU per call (docs/benchmarks.md).
    """

    def __init__(self) -> None:
        self._transport: httpx.BaseTransport | None = None
        self._base_url = ""
        self._headers: dict[str, str] = {}
        self._timeout = httpx.Timeout(30.0, connect=5.0)
        self._lock = threading.Lock()
        self._first_use_lock = threading.Lock()

    def connect(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Point at kuberay-service at ``base_url``, authenticating with the internal token."""
        headers = _headers(token)
        transport = transport or httpx.HTTPTransport(
            retries=CONNECT_RETRIES, socket_options=_SOCKET_OPTIONS, limits=_LIMITS
        )
        with self._lock:
            previous = self._transport
            self._base_url = base_url.rstrip("/") + PREFIX
            self._headers = headers
            self._timeout = httpx.Timeout(timeout, connect=5.0)
            self._transport = transport
        if previous is not None:
            previous.close()

    def connect_from_environment(self) -> None:
        """Connect to ``KUBERAY_URL`` (default port 8800 on loopback) with the internal token."""
        self.connect(os.environ.get(URL_ENV) or DEFAULT_URL, os.environ.get(TOKEN_ENV, ""))

    def close(self) -> None:
        """Close the pooled connections; the next call connects again."""
        with self._lock:
            previous, self._transport = self._transport, None
        if previous is not None:
            previous.close()

    def _connected(self) -> tuple[httpx.BaseTransport, str, dict[str, str], httpx.Timeout]:
        if self._transport is None:
            with self._first_use_lock:  # two threads' first calls make one connection
                if self._transport is None:
                    self.connect_from_environment()
        with self._lock:
            transport = self._transport
            if transport is None:
                raise RuntimeError("the connection to kuberay-service was closed")
            return transport, self._base_url, self._headers, self._timeout

    def send(self, request: WireRequest) -> tuple[int, bytes]:
        """Send one request; its status and body (reads retried after a dropped connection)."""
        attempts = READ_ATTEMPTS if request.idempotent else 1
        for attempt in range(1, attempts + 1):
            try:
                transport, base_url, headers, timeout = self._connected()
                response = transport.handle_request(
                    _httpx_request(base_url, headers, timeout, request)
                )
                try:
                    return response.status_code, response.read()
                finally:
                    response.close()
            except _RETRIABLE as exc:
                if attempt == attempts:
                    _failed(request, exc)
                time.sleep(_RETRY_BACKOFF_S * attempt)
            except (httpx.HTTPError, RuntimeError) as exc:  # RuntimeError: closed meanwhile
                _failed(request, exc)
        raise AssertionError("unreachable")  # pragma: no cover

    def perform_operation(
        self, operation: Operation[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _T:
        """Send the operation's request; a composed operation runs here over routed reads."""
        if operation.route is None:
            flow = operation.flow(_COMPOSED, *args, **kwargs)
            return run_flow(flow, cast(RawStore, _RoutedReads(self)), time.sleep)
        status, content = self.send(request_for(operation, args, kwargs))
        return result_from(operation, status, content)  # type: ignore[no-any-return]


class AsyncProxiedClient(Operations, AsyncRunner):
    """:class:`ProxiedClient`'s operations, awaited, over ``httpx.AsyncHTTPTransport``."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._base_url = base_url.rstrip("/") + PREFIX
        self._headers = _headers(token)
        self._timeout = httpx.Timeout(timeout, connect=5.0)
        self._transport = transport or httpx.AsyncHTTPTransport(
            retries=CONNECT_RETRIES, socket_options=_SOCKET_OPTIONS, limits=_LIMITS
        )
        self._closed = False

    @classmethod
    def from_environment(cls) -> AsyncProxiedClient:
        """A client for ``KUBERAY_URL`` (default port 8800 on loopback) with the token."""
        return cls(os.environ.get(URL_ENV) or DEFAULT_URL, os.environ.get(TOKEN_ENV, ""))

    async def close(self) -> None:
        """Close the pooled connections; later calls fail with TransportError."""
        self._closed = True
        await self._transport.aclose()

    async def send(self, request: WireRequest) -> tuple[int, bytes]:
        """Send one request; its status and body (reads retried after a dropped connection)."""
        attempts = READ_ATTEMPTS if request.idempotent else 1
        for attempt in range(1, attempts + 1):
            if self._closed:
                _failed(request, RuntimeError("the connection to kuberay-service was closed"))
            try:
                response = await self._transport.handle_async_request(
                    _httpx_request(self._base_url, self._headers, self._timeout, request)
                )
                try:
                    return response.status_code, await response.aread()
                finally:
                    await response.aclose()
            except _RETRIABLE as exc:
                if attempt == attempts:
                    _failed(request, exc)
                await asyncio.sleep(_RETRY_BACKOFF_S * attempt)
            except httpx.HTTPError as exc:
                _failed(request, exc)
        raise AssertionError("unreachable")  # pragma: no cover

    async def perform_operation(
        self, operation: Operation[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _T:
        """Send the operation's request; a composed operation runs here over routed reads."""
        if operation.route is None:
            flow = operation.flow(_COMPOSED, *args, **kwargs)
            reads = cast(AsyncRawStore, _AsyncRoutedReads(self))
            return await run_flow_async(flow, reads, asyncio.sleep)
        status, content = await self.send(request_for(operation, args, kwargs))
        return result_from(operation, status, content)  # type: ignore[no-any-return]


def _raw(result: Job | Endpoint) -> dict[str, Any]:
    return result.raw


class _RoutedReads:
    """The store a composed flow runs on; its only call, ``get``, is a routed read.

    Composed operations only read one object at a time (``wait_for_job``), so this is all
    of :class:`~gridweave_controller.store.RawStore` they reach.
    """

    def __init__(self, client: ProxiedClient) -> None:
        self._client = client

    def get(self, namespace: str, plural: str, name: str) -> dict[str, Any]:
        """Read one object through its routed get."""
        return _raw(self._client.perform_operation(_ROUTED_GETS[plural], (name,), {}))


class _AsyncRoutedReads:
    """:class:`_RoutedReads` for the asyncio client."""

    def __init__(self, client: AsyncProxiedClient) -> None:
        self._client = client

    async def get(self, namespace: str, plural: str, name: str) -> dict[str, Any]:
        """Read one object through its routed get."""
        return _raw(await self._client.perform_operation(_ROUTED_GETS[plural], (name,), {}))
