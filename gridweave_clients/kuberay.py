"""The controller's typed operations over kuberay-service's ``/v1/crd``: the proxied clients.

:class:`ProxiedClient` (blocking) and :class:`AsyncProxiedClient` inherit every operation of
:mod:`gridweave_controller.operations`, with its signature, and send each call as the
request its declaration names (:func:`request_for`) over the internal client base
(:mod:`gridweave_clients.base`); the answer becomes the typed result, and a refusal the
controller's own exception (:class:`StatusDecoder`: kuberay-service answers Kubernetes
``Status`` bodies). An operation without a route (``wait_for_job``) runs its flow here,
its reads sent as routed reads.

The wire form is :mod:`gridweave_clients.kuberay_wire`'s. A caller's copy of the object
(``known=`` of a setter) travels as its resourceVersion only: kuberay-service computes the
patch from an object it was itself answered at that version, never from a status the
caller sends. The asyncio client sends its writes alone while few are in flight, and
together in one ``POST /v1/crd/batch`` when more wait (:mod:`gridweave_clients.kuberay_batches`).

Retries (:class:`CrdRetryPolicy`): every call is retried when nothing was sent (a connect
error); reads also after a timeout, a dropped connection or a 5xx. Writes (creates,
deletes, phase setters) are not retried once sent: the first attempt may have been applied
and the object moved on since, so a blind repeat could apply a move twice (a requeue after
a re-allocation). The caller gets TransportError and reads the object to decide.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any, TypeVar, cast

import httpx

from gridweave_clients._core import Answer, Call, ErrorDecoder, Failure, RetryPolicy
from gridweave_clients.base import AsyncInternalClient, InternalClient
from gridweave_clients.kuberay_batches import DEFAULT_ALONE, WriteBatches
from gridweave_clients.kuberay_watch import AsyncProxiedWatchSource, ProxiedWatchSource
from gridweave_clients.kuberay_wire import (
    SERVICE,
    error_from_answer,
    request_for,
    result_from,
)
from gridweave_controller._flow import FlowContext, run_flow, run_flow_async
from gridweave_controller.errors import Invalid, TransportError
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.operations import (
    BATCHABLE,
    AsyncClientBase,
    BlockingClientBase,
    Operation,
    Operations,
)
from gridweave_controller.store import (
    ENDPOINTS,
    JOBS,
    AsyncRawStore,
    AsyncRawWatchSource,
    RawStore,
    RawWatchSource,
)

__all__ = [
    "DEFAULT_URL",
    "TOKEN_ENV",
    "URL_ENV",
    "AsyncProxiedClient",
    "CrdRetryPolicy",
    "ProxiedClient",
    "StatusDecoder",
    "request_for",
    "result_from",
]

URL_ENV = "KUBERAY_URL"
TOKEN_ENV = "GRIDWEAVE_SERVICE_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8800"
DEFAULT_TIMEOUT_S = 30.0
#: The namespace is kuberay-service's: a composed flow's reads go through routes that
#: ignore this one.
_COMPOSED = FlowContext("gridweave")
_ROUTED_GETS: dict[str, Operation[..., Any]] = {
    JOBS: Operations.get_job,
    ENDPOINTS: Operations.get_endpoint,
}
_T = TypeVar("_T")


class CrdRetryPolicy(RetryPolicy):
    """Only reads are sent again once they may have arrived; a write is sent once."""

    def retries(self, call: Call, attempt: int, failure: Failure) -> bool:
        """Not sent: retry anything; else only a GET."""
        if attempt >= self.attempts:
            return False
        return failure is Failure.NOT_SENT or call.method == "GET"


class StatusDecoder(ErrorDecoder):
    """kuberay-service's ``Status`` bodies become the controller's own exceptions."""

    def __init__(self) -> None:
        super().__init__(SERVICE)

    def refused(self, call: Call, answer: Answer) -> Exception:
        """The controller error the Status names (InvalidTransition, NotFound...)."""
        return error_from_answer(answer.status_code, answer.content)

    def unavailable(self, call: Call, reason: str) -> Exception:
        """No usable answer: TransportError."""
        return TransportError(f"{SERVICE} {call.method} {call.path}: {reason}")

    def closed(self, call: Call) -> Exception:
        """The client was closed: TransportError, nothing sent."""
        return TransportError(f"the connection to {SERVICE} was closed")

    def invalid_arguments(self, operation: str, fields: list[dict[str, str]]) -> Exception:
        """Arguments refused before sending: Invalid naming the first one."""
        field = fields[0]["field"] if fields else None
        return Invalid(f"{operation}: invalid {field}", field=field)


def _close(client: InternalClient | None, watches: ProxiedWatchSource | None) -> None:
    if client is not None:
        client.close()
    if watches is not None:
        watches.close()


def _raw(result: Job | Endpoint) -> dict[str, Any]:
    return result.raw


class ProxiedClient(BlockingClientBase):
    """The typed operations over one pooled HTTP connection to kuberay-service's ``/v1/crd``.

    Created unconnected; the first call connects from the environment unless
    :meth:`connect` was called. :meth:`close` closes the pool; the next call connects again.
    """

    def __init__(self) -> None:
        self._client: InternalClient | None = None
        self._watch_source: ProxiedWatchSource | None = None
        self._lock = threading.Lock()
        self._first_use_lock = threading.Lock()

    def connect(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Point at kuberay-service at ``base_url``, authenticating with a service token."""
        if not token:
            raise Invalid(f"{TOKEN_ENV} is required to call {SERVICE}", field=TOKEN_ENV)
        client = InternalClient(
            base_url,
            token,
            timeout=httpx.Timeout(timeout, connect=5.0),
            retry=CrdRetryPolicy(),
            decoder=StatusDecoder(),
            transport=transport,
        )
        watch_source = ProxiedWatchSource(base_url, token, timeout=timeout)
        with self._lock:
            previous, self._client = self._client, client
            previous_watches, self._watch_source = self._watch_source, watch_source
        _close(previous, previous_watches)

    def connect_from_environment(self) -> None:
        """Connect to ``KUBERAY_URL`` (default port 8800 on loopback) with the service token
        (``GRIDWEAVE_SERVICE_TOKEN``)."""
        self.connect(os.environ.get(URL_ENV) or DEFAULT_URL, os.environ.get(TOKEN_ENV, ""))

    def close(self) -> None:
        """Close the pooled connections; the next call connects again."""
        with self._lock:
            previous, self._client = self._client, None
            previous_watches, self._watch_source = self._watch_source, None
        _close(previous, previous_watches)

    def watch_target(self) -> tuple[RawWatchSource, str]:
        """Watches read kuberay-service's watch routes (its namespace, not one of ours)."""
        self._connected()
        source = self._watch_source
        if source is None:  # closed meanwhile
            raise TransportError(f"the connection to {SERVICE} was closed")
        return source, ""

    def _connected(self) -> InternalClient:
        client = self._client
        if client is None:
            with self._first_use_lock:  # two threads' first calls make one connection
                if self._client is None:
                    self.connect_from_environment()
                client = self._client
        if client is None:  # closed meanwhile
            raise TransportError(f"the connection to {SERVICE} was closed")
        return client

    def perform_operation(
        self, operation: Operation[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _T:
        """Send the operation's request; a composed operation runs here over routed reads."""
        if operation.route is None:
            flow = operation.flow(_COMPOSED, *args, **kwargs)
            return run_flow(flow, cast(RawStore, _RoutedReads(self)), time.sleep)
        answer = self._connected().send(request_for(operation, args, kwargs))
        return result_from(operation, answer)  # type: ignore[no-any-return]


class AsyncProxiedClient(AsyncClientBase):
    """:class:`ProxiedClient`'s operations, awaited, over the asyncio client base."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        transport: httpx.AsyncBaseTransport | None = None,
        batch_after: int = DEFAULT_ALONE,
    ) -> None:
        """``batch_after``: writes in flight before the next ones wait to go together."""
        if not token:
            raise Invalid(f"{TOKEN_ENV} is required to call {SERVICE}", field=TOKEN_ENV)
        self._client = AsyncInternalClient(
            base_url,
            token,
            timeout=httpx.Timeout(timeout, connect=5.0),
            retry=CrdRetryPolicy(),
            decoder=StatusDecoder(),
            transport=transport,
        )
        self._watch_source = AsyncProxiedWatchSource(base_url, token, timeout=timeout)
        self._writes = WriteBatches(self._client, batch_after)

    @classmethod
    def from_environment(cls) -> AsyncProxiedClient:
        """A client for ``KUBERAY_URL`` (default port 8800 on loopback) with the token."""
        return cls(os.environ.get(URL_ENV) or DEFAULT_URL, os.environ.get(TOKEN_ENV, ""))

    async def close(self) -> None:
        """Close the pooled connections; later calls fail with TransportError."""
        await self._client.aclose()
        await self._watch_source.aclose()

    def watch_target(self) -> tuple[AsyncRawWatchSource, str]:
        """Watches read kuberay-service's watch routes (its namespace, not one of ours)."""
        return self._watch_source, ""

    async def perform_operation(
        self, operation: Operation[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _T:
        """Send the operation's request; a composed operation runs here over routed reads."""
        if operation.route is None:
            flow = operation.flow(_COMPOSED, *args, **kwargs)
            reads = cast(AsyncRawStore, _AsyncRoutedReads(self))
            return await run_flow_async(flow, reads, asyncio.sleep)
        if operation.name in BATCHABLE:
            return await self._writes.write(operation, args, kwargs)  # type: ignore[no-any-return]
        answer = await self._client.send(request_for(operation, args, kwargs))
        return result_from(operation, answer)  # type: ignore[no-any-return]


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
