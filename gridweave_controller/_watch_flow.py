"""The typed watch as a sans-IO flow, written once for the blocking and the asyncio driver.

The flow lists (unless the caller already holds a list), hands out the differences against
what the caller was given, then watches from the list's resourceVersion. A stream the
server ends (its timeout) is opened again from the last version seen; a 410 (``Expired``:
the version was compacted away) is answered by listing again and handing out only the
differences (new: ADDED, another resourceVersion: MODIFIED, gone: DELETED with the last
object known), so the caller never loses a change nor sees one twice. Failures a retry can
fix (no connection, a dropped stream, 429 or 5xx) are retried with capped, jittered
backoff until the caller stops: the watch is reopened where it was, except after a server
error on the watch itself (a 500, not a gateway's 502-504), which lists again, as
client-go's reflector does. Any other error ends the watch. The flow yields its I/O
steps (:class:`ListObjects`, :class:`OpenWatch`, :class:`ReadEvent`, :class:`Backoff`)
and the events for the caller (:class:`WatchEvent`); a driver in
:mod:`gridweave_controller.watch` performs the steps.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from gridweave_controller._raw_watch import RawList
from gridweave_controller.errors import CrdError, Expired, TransportError

__all__ = [
    "WATCH_REQUEST_SECONDS",
    "Backoff",
    "EventType",
    "ListObjects",
    "OpenWatch",
    "ReadEvent",
    "WatchEvent",
    "WatchFlow",
    "WatchState",
    "backoff_seconds",
    "retriable",
    "watch_flow",
]

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
#: How long one watch request lasts before the server ends it and the flow opens the next.
WATCH_REQUEST_SECONDS = 290
_BACKOFF_BASE_S = 0.05
_BACKOFF_CAP_S = 2.0
#: Codes that say the server is unreachable or busy: reopen the watch where it was.
_GATEWAY_CODES = frozenset({502, 503, 504})
_R = TypeVar("_R")


@dataclass(frozen=True, slots=True)
class WatchEvent(Generic[_R]):
    """One change: the typed object after it (DELETED: as last known) and its version.

    A BOOKMARK carries no object: only the resourceVersion the watch has reached. One
    follows the events of every list, so the first BOOKMARK of a watch that listed marks
    the end of the objects that existed when it started.
    """

    type: EventType
    object: _R | None
    resource_version: str


@dataclass(frozen=True, slots=True)
class ListObjects:
    """List the objects; the flow is sent the :class:`RawList`."""


@dataclass(frozen=True, slots=True)
class OpenWatch:
    """Open a raw watch after ``resource_version``, for at most ``timeout_seconds``."""

    resource_version: str
    timeout_seconds: int


@dataclass(frozen=True, slots=True)
class ReadEvent:
    """Read the open watch's next raw event; the flow is sent it, or None when it ended."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Wait before trying again."""

    seconds: float


Step: TypeAlias = ListObjects | OpenWatch | ReadEvent | Backoff
#: A typed watch in flight: yields steps and events, is sent the steps' results.
WatchFlow: TypeAlias = Generator[Step | WatchEvent[_R], Any, None]

_LIST = ListObjects()
_READ = ReadEvent()


def _version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class WatchState(Generic[_R]):
    """What the caller has been given: the last object of each name, and the version reached."""

    def __init__(
        self,
        parse: Callable[[dict[str, Any]], _R],
        known: Iterable[dict[str, Any]] = (),
        resource_version: str | None = None,
    ) -> None:
        self._parse = parse
        self.known: dict[str, dict[str, Any]] = {obj["metadata"]["name"]: obj for obj in known}
        self.resource_version = resource_version or ""

    def relist(self, page: RawList) -> list[WatchEvent[_R]]:
        """The differences between a list and what was given, then a BOOKMARK at the list."""
        events: list[WatchEvent[_R]] = []
        listed: dict[str, dict[str, Any]] = {}
        for obj in page.items:
            name = obj["metadata"]["name"]
            listed[name] = obj
            before = self.known.get(name)
            if before is None:
                events.append(WatchEvent("ADDED", self._parse(obj), _version(obj)))
            elif _version(before) != _version(obj):
                events.append(WatchEvent("MODIFIED", self._parse(obj), _version(obj)))
        for name, obj in self.known.items():
            if name not in listed:
                events.append(WatchEvent("DELETED", self._parse(obj), _version(obj)))
        self.known = listed
        self.resource_version = page.resource_version
        events.append(WatchEvent("BOOKMARK", None, page.resource_version))
        return events

    def apply(self, event: dict[str, Any]) -> WatchEvent[_R] | None:
        """A raw event as the caller's typed event; None if the caller already has it.

        ADDED for a name already given reads as MODIFIED and MODIFIED for an unknown one as
        ADDED, so the caller's view stays consistent whatever the server's filter did.
        """
        obj = event["object"]
        version = _version(obj)
        if event["type"] == "BOOKMARK":
            if version:
                self.resource_version = version
            return WatchEvent("BOOKMARK", None, version)
        name = obj["metadata"]["name"]
        before = self.known.get(name)
        if version:
            self.resource_version = version
        if event["type"] == "DELETED":
            self.known.pop(name, None)
            return WatchEvent("DELETED", self._parse(obj), version)
        if before is not None and _version(before) == version:
            return None
        self.known[name] = obj
        return WatchEvent("ADDED" if before is None else "MODIFIED", self._parse(obj), version)


def _code(error: CrdError) -> int:
    code = error.status.get("code")
    return code if isinstance(code, int) else 0


def retriable(error: CrdError) -> bool:
    """Whether trying again can help: no answer at all, 429 or a server error."""
    code = _code(error)
    return isinstance(error, TransportError) and (code == 0 or code == 429 or code >= 500)


def _needs_list(error: CrdError) -> bool:
    """A server error on the watch itself (not unreachable, busy or behind a gateway).

    The apiserver can fail a watch for good at a version (a 500 when etcd compacted the
    previous state of the first event): like client-go's reflector, list again rather
    than reopen at the same version.
    """
    return _code(error) >= 500 and _code(error) not in _GATEWAY_CODES


def backoff_seconds(failures: int) -> float:
    """Full-jitter exponential backoff after ``failures`` failures in a row."""
    ceiling = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2 ** max(failures - 1, 0))
    return random.uniform(ceiling / 2, ceiling)


def watch_flow(
    state: WatchState[_R],
    *,
    listed: bool,
    deadline: float | None,
    clock: Callable[[], float],
) -> WatchFlow[_R]:
    """The typed watch: list unless ``listed``, then watch, relist on 410, retry failures.

    Ends when ``clock()`` passes ``deadline`` (never without one) at the end of a stream.
    """
    need_list = not listed
    failures = 0
    while True:
        remaining = None if deadline is None else deadline - clock()
        if remaining is not None and remaining <= 0:
            return
        try:
            if need_list:
                page: RawList = yield _LIST
                yield from state.relist(page)
                need_list = False
            seconds = WATCH_REQUEST_SECONDS
            if remaining is not None:
                seconds = max(1, min(seconds, math.ceil(remaining)))
            yield OpenWatch(state.resource_version, seconds)
            while (raw := (yield _READ)) is not None:
                failures = 0  # the stream works
                typed = state.apply(raw)
                if typed is not None:
                    yield typed
            failures = 0
        except Expired:
            need_list = True
            failures += 1
            if failures > 1:  # listed and expired again at once: let the server catch up
                yield Backoff(backoff_seconds(failures - 1))
        except CrdError as error:
            if not retriable(error):
                raise
            need_list = need_list or _needs_list(error)
            failures += 1
            yield Backoff(backoff_seconds(failures))
