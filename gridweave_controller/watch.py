"""Typed watches of GridweaveJobs and GridweaveEndpoints, blocking and under asyncio.

::

    with watch_jobs(store, "gridweave", label_selector="gridweave.io/user=alice") as events:
        for event in events:  # WatchEvent: type, object (a Job), resource_version
            ...

    async with watch_jobs_async(async_store, "gridweave") as events:
        async for event in events:
            ...

Without ``resource_version`` a watch lists first and hands out every object as ADDED,
then a BOOKMARK at the list's version (the end of the initial objects), then the changes.
With ``resource_version`` (and ``known``: the objects the caller holds at that version,
typically the list it came from) it hands out the changes after that version only. Either
way a 410 is answered by listing again and handing out the differences, a stream the server
ends is opened again from the last version seen, and a lost connection is retried with
backoff until the caller stops: no change is lost or handed out twice. The logic is the
sans-IO flow of :mod:`gridweave_controller._watch_flow`; :class:`Watch` and
:class:`AsyncWatch` only perform its steps on a
:class:`~gridweave_controller.store.RawWatchSource` (every store, and the proxied client's).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, TypeVar

from gridweave_controller._raw_watch import (
    AsyncRawWatch,
    AsyncRawWatchSource,
    RawWatch,
    RawWatchSource,
)
from gridweave_controller._watch_flow import (
    Backoff,
    EventType,
    ListObjects,
    OpenWatch,
    ReadEvent,
    WatchEvent,
    WatchFlow,
    WatchState,
    watch_flow,
)
from gridweave_controller.errors import CrdError, Invalid
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.store import ENDPOINTS, JOBS

__all__ = [
    "AsyncWatch",
    "EventType",
    "Watch",
    "WatchEvent",
    "WatchQuery",
    "watch_endpoints",
    "watch_endpoints_async",
    "watch_jobs",
    "watch_jobs_async",
]

_R = TypeVar("_R", Job, Endpoint)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class WatchQuery:
    """Which objects a watch follows: one resource in one namespace, both selectors."""

    namespace: str
    plural: str
    label_selector: str | None = None
    field_selector: str | None = None


class _Driver(Generic[_T]):
    """What both drivers share: the flow, the reply or failure it is sent next, stopping."""

    def __init__(self, flow: WatchFlow[_T], query: WatchQuery) -> None:
        self.query = query
        self._flow = flow
        self._reply: Any = None
        self._failure: BaseException | None = None
        self._stopped = False

    def _advance(self) -> Any:
        """The flow's next step or event; StopIteration when it (or the caller) stopped."""
        if self._stopped:
            self._flow.close()  # here, in the thread that runs it
            raise StopIteration
        reply, failure = self._reply, self._failure
        self._reply = self._failure = None
        return self._flow.send(reply) if failure is None else self._flow.throw(failure)

    def _fail(self, error: CrdError) -> None:
        self._failure = error


class Watch(_Driver[_T]):
    """A typed watch on a blocking source: iterate it; :meth:`close` works from any thread."""

    def __init__(self, flow: WatchFlow[_T], source: RawWatchSource, query: WatchQuery) -> None:
        super().__init__(flow, query)
        self._source = source
        self._stream: RawWatch | None = None
        self._wake = threading.Event()
        self._lock = threading.Lock()

    def __iter__(self) -> Watch[_T]:
        return self

    def __next__(self) -> WatchEvent[_T]:
        try:
            while True:
                step = self._advance()
                if isinstance(step, WatchEvent):
                    return step
                self._perform(step)
        except BaseException:
            self.close()
            raise

    def _perform(self, step: Any) -> None:
        query = self.query
        try:
            if isinstance(step, ReadEvent):
                stream = self._stream  # None once closed from another thread: the end
                self._reply = None if stream is None else next(stream, None)
            elif isinstance(step, OpenWatch):
                self._drop_stream()
                stream = self._source.watch(
                    query.namespace,
                    query.plural,
                    label_selector=query.label_selector,
                    field_selector=query.field_selector,
                    resource_version=step.resource_version or None,
                    timeout_seconds=step.timeout_seconds,
                )
                with self._lock:
                    self._stream = stream
                if self._stopped:
                    stream.close()
            elif isinstance(step, ListObjects):
                self._reply = self._source.list_page(
                    query.namespace,
                    query.plural,
                    query.label_selector,
                    field_selector=query.field_selector,
                )
            elif isinstance(step, Backoff):
                self._wake.wait(step.seconds)
        except CrdError as error:
            self._drop_stream()
            if not self._stopped:
                self._fail(error)

    def _drop_stream(self) -> None:
        with self._lock:
            stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()

    def close(self) -> None:
        """Stop: the stream is closed, a read or a backoff blocked in another thread ends."""
        self._stopped = True
        self._wake.set()
        self._drop_stream()

    def __enter__(self) -> Watch[_T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncWatch(_Driver[_T]):
    """A typed watch on an asyncio source: ``async for`` it; :meth:`aclose` stops it."""

    def __init__(self, flow: WatchFlow[_T], source: AsyncRawWatchSource, query: WatchQuery) -> None:
        super().__init__(flow, query)
        self._source = source
        self._stream: AsyncRawWatch | None = None
        self._wake = asyncio.Event()

    def __aiter__(self) -> AsyncWatch[_T]:
        return self

    async def __anext__(self) -> WatchEvent[_T]:
        try:
            while True:
                try:
                    step = self._advance()
                except StopIteration:
                    raise StopAsyncIteration from None
                if isinstance(step, WatchEvent):
                    return step
                await self._perform(step)
        except BaseException:
            await self.aclose()
            raise

    async def _perform(self, step: Any) -> None:
        query = self.query
        try:
            if isinstance(step, ReadEvent):
                stream = self._stream  # None once closed from another task: the end
                self._reply = None if stream is None else await anext(stream, None)
            elif isinstance(step, OpenWatch):
                await self._drop_stream()
                self._stream = await self._source.watch(
                    query.namespace,
                    query.plural,
                    label_selector=query.label_selector,
                    field_selector=query.field_selector,
                    resource_version=step.resource_version or None,
                    timeout_seconds=step.timeout_seconds,
                )
            elif isinstance(step, ListObjects):
                self._reply = await self._source.list_page(
                    query.namespace,
                    query.plural,
                    query.label_selector,
                    field_selector=query.field_selector,
                )
            elif isinstance(step, Backoff):
                try:  # not asyncio.wait_for: on 3.11 it can swallow a cancellation
                    async with asyncio.timeout(step.seconds):
                        await self._wake.wait()
                except TimeoutError:
                    pass
        except CrdError as error:
            await self._drop_stream()
            if not self._stopped:
                self._fail(error)

    async def _drop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()

    async def aclose(self) -> None:
        """Stop: the stream is closed; a pending read or backoff ends."""
        self._stopped = True
        self._wake.set()
        await self._drop_stream()

    async def __aenter__(self) -> AsyncWatch[_T]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


def _flow(
    parse: Callable[[dict[str, Any]], _R],
    resource_version: str | None,
    known: Iterable[_R],
    timeout_seconds: float | None,
) -> WatchFlow[_R]:
    if timeout_seconds is not None and not (math.isfinite(timeout_seconds) and timeout_seconds > 0):
        raise Invalid("timeout_seconds must be a positive number", field="timeout_seconds")
    if resource_version is not None and not resource_version:
        raise Invalid("resource_version must not be empty", field="resource_version")
    state = WatchState(parse, (item.raw for item in known), resource_version)
    deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
    return watch_flow(
        state, listed=resource_version is not None, deadline=deadline, clock=time.monotonic
    )


def watch_jobs(
    source: RawWatchSource,
    namespace: str,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    resource_version: str | None = None,
    known: Iterable[Job] = (),
    timeout_seconds: float | None = None,
) -> Watch[Job]:
    """Watch the GridweaveJobs of ``namespace`` (see the module docstring).

    Args:
        resource_version: hand out the changes after this version only (no first list).
        known: the jobs the caller holds at ``resource_version``; compared against when a
            410 makes the watch list again (and, without ``resource_version``, against the
            first list: a caller that restarts a watch hands in what it has).
        timeout_seconds: stop after this long (default: never).
    """
    flow = _flow(Job.from_raw, resource_version, known, timeout_seconds)
    return Watch(flow, source, WatchQuery(namespace, JOBS, label_selector, field_selector))


def watch_endpoints(
    source: RawWatchSource,
    namespace: str,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    resource_version: str | None = None,
    known: Iterable[Endpoint] = (),
    timeout_seconds: float | None = None,
) -> Watch[Endpoint]:
    """Watch the GridweaveEndpoints of ``namespace``, like :func:`watch_jobs`."""
    flow = _flow(Endpoint.from_raw, resource_version, known, timeout_seconds)
    return Watch(flow, source, WatchQuery(namespace, ENDPOINTS, label_selector, field_selector))


def watch_jobs_async(
    source: AsyncRawWatchSource,
    namespace: str,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    resource_version: str | None = None,
    known: Iterable[Job] = (),
    timeout_seconds: float | None = None,
) -> AsyncWatch[Job]:
    """:func:`watch_jobs` on an asyncio source: ``async for event in watch_jobs_async(...)``."""
    flow = _flow(Job.from_raw, resource_version, known, timeout_seconds)
    return AsyncWatch(flow, source, WatchQuery(namespace, JOBS, label_selector, field_selector))


def watch_endpoints_async(
    source: AsyncRawWatchSource,
    namespace: str,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    resource_version: str | None = None,
    known: Iterable[Endpoint] = (),
    timeout_seconds: float | None = None,
) -> AsyncWatch[Endpoint]:
    """:func:`watch_endpoints` on an asyncio source."""
    flow = _flow(Endpoint.from_raw, resource_version, known, timeout_seconds)
    return AsyncWatch(
        flow, source, WatchQuery(namespace, ENDPOINTS, label_selector, field_selector)
    )
