"""The in-memory store's watch: an event log in resourceVersion order, compacted like etcd.

Every write of :class:`~tests.support.memory_store.MemoryStore` appends one change to its
:class:`EventLog` under the store's lock; a watch reads the changes after its cursor and
waits on the log's condition variable (blocking) or on an ``asyncio.Event`` the log sets
from any thread (asyncio), never by polling. ``compact(version)`` forgets the changes up to
``version``: a watch that still needs one of them fails with ``Expired`` (410), which the
apiserver sends as an ERROR event after a 200, so it is raised on the first read, not when
the watch is opened. A change that makes an object match a label selector is delivered as
ADDED and one that makes it stop matching as DELETED, as the apiserver's filter does.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gridweave_controller.errors import CrdError, error_from_status
from gridweave_controller.store import GROUP, VERSION

__all__ = ["AsyncMemoryWatch", "Change", "EventLog", "MemoryWatch", "WatchRequest"]

Matcher = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True, slots=True)
class Change:
    """One write: the object after it (a DELETED one as it was, at the deletion's version)."""

    version: int
    namespace: str
    plural: str
    type: str
    object: dict[str, Any]
    #: The labels before the write (None for a create): a selector may stop matching.
    previous_labels: Mapping[str, str] | None


def _expired(version: int, oldest: int) -> CrdError:
    message = f"too old resource version: {version} ({oldest})"
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Expired",
        "code": 410,
    }
    return error_from_status(status, 410)


class EventLog:
    """The changes of one store, oldest first, until compacted; shares the store's lock."""

    def __init__(self, lock: threading.Lock) -> None:
        self.changed = threading.Condition(lock)
        self._changes: list[Change] = []
        self._versions: list[int] = []
        #: Changes at or below this version are forgotten.
        self.compacted = 0
        #: The newest version written (a bookmark's version).
        self.version = 0
        self._wakers: set[Callable[[], None]] = set()

    def record(
        self,
        namespace: str,
        plural: str,
        kind: str,
        obj: dict[str, Any],
        previous_labels: Mapping[str, str] | None = None,
    ) -> None:
        """Append a change (the caller holds the store's lock) and wake every watch."""
        version = int(obj["metadata"]["resourceVersion"])
        labels = dict(obj["metadata"].get("labels") or {})
        if kind != "ADDED" and previous_labels is None:
            previous_labels = labels
        self._changes.append(Change(version, namespace, plural, kind, obj, previous_labels))
        self._versions.append(version)
        self.version = version
        self.changed.notify_all()
        for wake in list(self._wakers):
            try:
                wake()
            except RuntimeError:  # its event loop is closed: that watch is gone
                self._wakers.discard(wake)

    def compact(self, up_to: int) -> None:
        """Forget the changes at or below ``up_to`` (the caller holds the lock)."""
        cut = bisect.bisect_right(self._versions, up_to)
        del self._changes[:cut], self._versions[:cut]
        self.compacted = max(self.compacted, up_to)
        self.changed.notify_all()

    def forget(self, version: int) -> None:
        """Forget everything (the store was emptied at ``version``)."""
        self._changes.clear()
        self._versions.clear()
        self.version = max(self.version, version)
        self.compacted = self.version
        self.changed.notify_all()

    def after(self, version: int) -> list[Change]:
        """The changes after ``version``; Expired if some of them were compacted away."""
        if version < self.compacted:
            raise _expired(version, self.compacted + 1)
        return self._changes[bisect.bisect_right(self._versions, version) :]

    def add_waker(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` (with the lock held) after every change."""
        self._wakers.add(wake)

    def remove_waker(self, wake: Callable[[], None]) -> None:
        """Stop calling ``wake``."""
        self._wakers.discard(wake)


@dataclass
class WatchRequest:
    """What one watch sees: its resource, selectors, starting point and deadline."""

    log: EventLog
    namespace: str
    plural: str
    kind: str
    labels_match: Matcher
    fields_match: Matcher
    #: The version the watch continues after.
    cursor: int
    #: The current objects, delivered as ADDED first (a watch without a resourceVersion).
    initial: list[dict[str, Any]] = field(default_factory=list)
    timeout_seconds: int | None = None
    allow_bookmarks: bool = True
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float | None:
        """Seconds until the server would close this watch; None without a timeout."""
        if self.timeout_seconds is None:
            return None
        return self.timeout_seconds - (time.monotonic() - self.started)


class _Cursor:
    """One watch's position in the log and what it has ready to hand out."""

    def __init__(self, request: WatchRequest) -> None:
        self.request = request
        self.ready: deque[dict[str, Any]] = deque(
            {"type": "ADDED", "object": obj} for obj in request.initial
        )
        self.closed = False

    def _visible(self, change: Change) -> dict[str, Any] | None:
        request = self.request
        if change.namespace != request.namespace or change.plural != request.plural:
            return None
        obj = change.object
        now = request.labels_match(obj["metadata"].get("labels") or {}) and request.fields_match(
            obj
        )
        before = change.previous_labels is not None and request.labels_match(change.previous_labels)
        kind = change.type
        if kind == "MODIFIED" and now != before:
            kind = "ADDED" if now else "DELETED"
        elif not now:
            return None
        return {"type": kind, "object": copy.deepcopy(obj)}

    def take(self) -> bool:
        """Move what changed since the cursor to ``ready`` (lock held); whether any did."""
        changes = self.request.log.after(self.request.cursor)
        for change in changes:
            event = self._visible(change)
            if event is not None:
                self.ready.append(event)
        if changes:
            self.request.cursor = changes[-1].version
        return bool(self.ready)

    def end(self) -> None:
        """The server's timeout: a bookmark at the current version if asked for, then the end."""
        if self.request.allow_bookmarks:
            metadata = {"resourceVersion": str(max(self.request.cursor, self.request.log.version))}
            bookmark = {"kind": self.request.kind, "apiVersion": f"{GROUP}/{VERSION}"}
            self.ready.append({"type": "BOOKMARK", "object": {**bookmark, "metadata": metadata}})
        self.closed = True

    def fail(self, error: CrdError) -> CrdError:
        """End the watch on ``error`` (an ERROR event ends the apiserver's stream too)."""
        self.closed = True
        return error


class MemoryWatch:
    """A blocking watch on an :class:`EventLog`; :meth:`close` works from any thread."""

    def __init__(self, request: WatchRequest) -> None:
        self._cursor = _Cursor(request)
        self._changed = request.log.changed

    def __iter__(self) -> MemoryWatch:
        return self

    def __next__(self) -> dict[str, Any]:
        cursor = self._cursor
        with self._changed:
            while not cursor.ready:
                if cursor.closed:
                    raise StopIteration
                try:
                    if cursor.take():
                        break
                except CrdError as error:
                    raise cursor.fail(error) from None
                remaining = cursor.request.remaining()
                if remaining is not None and remaining <= 0:
                    cursor.end()
                    continue
                self._changed.wait(remaining)
            return cursor.ready.popleft()

    def close(self) -> None:
        """End the watch; a read blocked in another thread returns."""
        with self._changed:
            self._cursor.closed = True
            self._cursor.ready.clear()
            self._changed.notify_all()


class AsyncMemoryWatch:
    """The same watch under asyncio: woken by the log through the loop, never blocking it."""

    def __init__(self, request: WatchRequest) -> None:
        self._cursor = _Cursor(request)
        self._lock = request.log.changed
        self._woken = asyncio.Event()
        loop = asyncio.get_running_loop()

        def wake() -> None:
            loop.call_soon_threadsafe(self._woken.set)

        self._wake = wake
        with self._lock:
            request.log.add_waker(self._wake)

    def __aiter__(self) -> AsyncMemoryWatch:
        return self

    async def __anext__(self) -> dict[str, Any]:
        await asyncio.sleep(0)  # a network read yields to the loop; so does this one
        cursor = self._cursor
        while True:
            self._woken.clear()  # before looking: a change from now on sets it again
            with self._lock:
                if cursor.ready:
                    return cursor.ready.popleft()
                if cursor.closed:
                    break
                try:
                    if cursor.take():
                        return cursor.ready.popleft()
                except CrdError as error:
                    raise cursor.fail(error) from None
                remaining = cursor.request.remaining()
                if remaining is not None and remaining <= 0:
                    cursor.end()
                    continue
            try:  # not asyncio.wait_for: on 3.11 it can swallow a cancellation
                async with asyncio.timeout(remaining):
                    await self._woken.wait()
            except TimeoutError:
                pass
        await self.aclose()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """End the watch; a read waiting in another task returns."""
        with self._lock:
            self._cursor.closed = True
            self._cursor.ready.clear()
            self._cursor.request.log.remove_waker(self._wake)
        self._woken.set()
