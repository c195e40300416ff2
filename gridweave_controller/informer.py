"""Informers: a local cache of jobs or endpoints kept by a typed watch, with handlers.

An informer lists, then watches (:mod:`gridweave_controller.watch`: relist on 410,
reconnect, no change lost or repeated), keeps the objects by name, and calls its handlers
in the order of the changes: ``on_add(obj)``, ``on_update(old, new)``, ``on_delete(obj)``.
It is synced once the objects that existed when it started are in the cache and handed to
``on_add``. Every ``resync_seconds`` it hands the whole cache to ``on_update(obj, obj)``
again (a level-triggered consumer catches up on anything it failed to act on). If its
watch ends on an error no retry can fix (say, the CRD is not installed), it logs it and
starts over after a pause, listing again and handing out only the differences from its
cache. :class:`AsyncInformer` runs on the event loop (the job gateway's); :class:`Informer`
runs in a thread. Both use one :class:`InformerCache`, so caching and dispatch are written
once::

    informer = AsyncInformer(
        lambda known: watch_jobs_async(store, "gridweave", known=known),
        on_add=schedule, on_update=reschedule, on_delete=release,
    )
    async with informer:
        await informer.wait_until_synced()
        job = informer.get("job-1")

Handlers may be plain functions or, for :class:`AsyncInformer`, coroutine functions. One
that raises is logged and the informer goes on.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Literal, Protocol, TypeVar

from gridweave_controller._watch_flow import WatchEvent, backoff_seconds
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.watch import AsyncWatch, Watch

__all__ = ["AsyncInformer", "Informer", "InformerCache", "Notification"]

_R = TypeVar("_R", Job, Endpoint)
_log = logging.getLogger(__name__)

#: ``on_add(obj)``, ``on_update(old, new)``, ``on_delete(obj)``; may return an awaitable.
Handler = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Notification(Generic[_R]):
    """One handler call: an add, an update (old, new) or a delete (old)."""

    kind: Literal["add", "update", "delete"]
    old: _R | None
    new: _R | None

    def arguments(self) -> tuple[_R, ...]:
        """What the handler of this kind is called with."""
        if self.kind == "add":
            assert self.new is not None
            return (self.new,)
        if self.kind == "update":
            assert self.old is not None and self.new is not None
            return (self.old, self.new)
        assert self.old is not None
        return (self.old,)


class InformerCache(Generic[_R]):
    """The objects by name and what each watch event means for the handlers (no I/O)."""

    def __init__(self) -> None:
        self._items: dict[str, _R] = {}
        self.resource_version = ""
        self.synced = False

    def apply(self, event: WatchEvent[_R]) -> Notification[_R] | None:
        """Apply one event; the handler call it makes, if any."""
        self.resource_version = event.resource_version or self.resource_version
        obj = event.object
        if event.type == "BOOKMARK" or obj is None:
            self.synced = True  # the first one follows the first list
            return None
        name = obj.name
        if event.type == "DELETED":
            old = self._items.pop(name, None)
            return Notification("delete", old if old is not None else obj, None)
        old = self._items.get(name)
        self._items[name] = obj
        if old is None:
            return Notification("add", None, obj)
        return Notification("update", old, obj)

    def resync(self) -> list[Notification[_R]]:
        """Every cached object as an update to itself."""
        return [Notification("update", obj, obj) for obj in self._items.values()]

    def get(self, name: str) -> _R | None:
        """The cached object of that name."""
        return self._items.get(name)

    def objects(self) -> list[_R]:
        """Every cached object."""
        return list(self._items.values())


class _Handlers:
    """The registered handlers of each kind."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[Handler]] = {"add": [], "update": [], "delete": []}

    def add(
        self, on_add: Handler | None, on_update: Handler | None, on_delete: Handler | None
    ) -> None:
        for kind, handler in (("add", on_add), ("update", on_update), ("delete", on_delete)):
            if handler is not None:
                self.by_kind[kind].append(handler)

    def calls(self, note: Notification[Any]) -> Iterable[tuple[Handler, tuple[Any, ...]]]:
        arguments = note.arguments()
        return ((handler, arguments) for handler in self.by_kind[note.kind])


def _logged(handler: Handler, error: BaseException) -> None:
    _log.error("informer handler %r failed", handler, exc_info=error)


class _Flag(Protocol):
    """A set-once flag: ``threading.Event`` or ``asyncio.Event``."""

    def is_set(self) -> bool: ...


class _CacheView(Generic[_R]):
    """What both informers answer from their cache, and their handlers."""

    _cache: InformerCache[_R]
    _handlers: _Handlers
    _synced: _Flag

    def add_handlers(
        self,
        *,
        on_add: Handler | None = None,
        on_update: Handler | None = None,
        on_delete: Handler | None = None,
    ) -> None:
        """Add handlers (before :meth:`start`: they also see the first list)."""
        self._handlers.add(on_add, on_update, on_delete)

    @property
    def has_synced(self) -> bool:
        """Whether the objects that existed at the start are in the cache."""
        return self._synced.is_set()

    @property
    def resource_version(self) -> str:
        """The resourceVersion the cache is at."""
        return self._cache.resource_version

    def get(self, name: str) -> _R | None:
        """The cached object of that name."""
        return self._cache.get(name)

    def list(self) -> builtins.list[_R]:
        """Every cached object."""
        return self._cache.objects()


class AsyncInformer(_CacheView[_R]):
    """An informer on the event loop: handlers run on it, in the order of the changes."""

    _synced: asyncio.Event

    def __init__(
        self,
        watch: Callable[[builtins.list[_R]], AsyncWatch[_R]],
        *,
        on_add: Handler | None = None,
        on_update: Handler | None = None,
        on_delete: Handler | None = None,
        resync_seconds: float | None = None,
    ) -> None:
        self._watch_from: Callable[[builtins.list[_R]], AsyncWatch[_R]] = watch
        self._cache: InformerCache[_R] = InformerCache()
        self._handlers = _Handlers()
        self._handlers.add(on_add, on_update, on_delete)
        self._resync_seconds = resync_seconds
        self._synced = asyncio.Event()
        self._dispatching = asyncio.Lock()
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._watch: AsyncWatch[_R] | None = None

    def start(self) -> None:
        """Start watching (and resyncing) in tasks of the running loop."""
        if self._tasks:
            return
        self._tasks.append(asyncio.create_task(self._run(), name="informer-watch"))
        if self._resync_seconds is not None:
            self._tasks.append(asyncio.create_task(self._resync(), name="informer-resync"))

    async def wait_until_synced(self, timeout: float | None = None) -> bool:
        """Wait until synced; False if ``timeout`` passed first."""
        try:
            async with asyncio.timeout(timeout):
                await self._synced.wait()
        except TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        """Stop watching; handlers are no longer called once this returns."""
        self._stopping = True  # besides the cancel: a library may swallow one
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        if self._watch is not None:
            await self._watch.aclose()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def __aenter__(self) -> AsyncInformer[_R]:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _dispatch(self, notes: Iterable[Notification[_R]]) -> None:
        async with self._dispatching:
            for note in notes:
                if self._stopping:
                    return
                for handler, arguments in self._handlers.calls(note):
                    try:
                        result = handler(*arguments)
                        if inspect.isawaitable(result):
                            await result
                    except Exception as error:
                        _logged(handler, error)

    async def _run(self) -> None:
        failures = 0
        while not self._stopping:
            self._watch = watch = self._watch_from(self._cache.objects())
            try:
                async for event in watch:
                    note = self._cache.apply(event)
                    if note is not None:
                        await self._dispatch((note,))
                    elif self._cache.synced:
                        self._synced.set()
                    failures = 0
            except Exception as error:  # logged; the informer must outlive it
                failures += 1
                _log.error("informer watch failed; starting over", exc_info=error)
            finally:
                await watch.aclose()
            await asyncio.sleep(backoff_seconds(failures + 1))

    async def _resync(self) -> None:
        assert self._resync_seconds is not None
        while not self._stopping:
            await asyncio.sleep(self._resync_seconds)
            await self._dispatch(self._cache.resync())


class Informer(_CacheView[_R]):
    """An informer in a thread of its own: handlers run in that thread, in order."""

    _synced: threading.Event

    def __init__(
        self,
        watch: Callable[[builtins.list[_R]], Watch[_R]],
        *,
        on_add: Handler | None = None,
        on_update: Handler | None = None,
        on_delete: Handler | None = None,
        resync_seconds: float | None = None,
    ) -> None:
        self._watch_from: Callable[[builtins.list[_R]], Watch[_R]] = watch
        self._cache: InformerCache[_R] = InformerCache()
        self._handlers = _Handlers()
        self._handlers.add(on_add, on_update, on_delete)
        self._resync_seconds = resync_seconds
        self._synced = threading.Event()
        self._stopping = threading.Event()
        self._dispatching = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._watch: Watch[_R] | None = None

    def start(self) -> None:
        """Start watching (and resyncing) in threads of their own."""
        if self._threads:
            return
        self._threads.append(threading.Thread(target=self._run, name="informer", daemon=True))
        if self._resync_seconds is not None:
            resync = threading.Thread(target=self._resync, name="informer-resync", daemon=True)
            self._threads.append(resync)
        for thread in self._threads:
            thread.start()

    def wait_until_synced(self, timeout: float | None = None) -> bool:
        """Wait until synced; False if ``timeout`` passed first."""
        return self._synced.wait(timeout)

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop watching and wait for the threads; handlers are no longer called after it."""
        self._stopping.set()
        if self._watch is not None:
            self._watch.close()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def __enter__(self) -> Informer[_R]:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _dispatch(self, notes: Iterable[Notification[_R]]) -> None:
        with self._dispatching:
            for note in notes:
                if self._stopping.is_set():
                    return
                for handler, arguments in self._handlers.calls(note):
                    try:
                        handler(*arguments)
                    except Exception as error:
                        _logged(handler, error)

    def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            self._watch = watch = self._watch_from(self._cache.objects())
            if self._stopping.is_set():
                watch.close()
            try:
                for event in watch:
                    note = self._cache.apply(event)
                    if note is not None:
                        self._dispatch((note,))
                    elif self._cache.synced:
                        self._synced.set()
                    failures = 0
            except Exception as error:  # logged; the informer must outlive it
                failures += 1
                _log.error("informer watch failed; starting over", exc_info=error)
            finally:
                watch.close()
            self._stopping.wait(backoff_seconds(failures + 1))

    def _resync(self) -> None:
        assert self._resync_seconds is not None
        while not self._stopping.wait(self._resync_seconds):
            self._dispatch(self._cache.resync())
