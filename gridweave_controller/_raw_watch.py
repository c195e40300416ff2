"""The list-watch half of the raw store: a list with its resourceVersion, and a raw watch.

A watch is the apiserver's: events ``{"type": "ADDED" | "MODIFIED" | "DELETED" |
"BOOKMARK", "object": {...}}`` in resourceVersion order, for the objects that match the
selectors, after the resourceVersion it starts from. Opening one sends the request (so a
bad selector or a missing resource type is raised at once); iterating it reads the events;
an ``ERROR`` event is raised as the error its Status names, :class:`~gridweave_controller.
errors.Expired` (410) when the starting resourceVersion is older than the history the
server keeps. The stream ends when the server closes it (``timeout_seconds``) or when it is
closed. Every store (:class:`~gridweave_controller.store.RawStore`) is also a
:class:`RawWatchSource`; the proxied client is one without being a store.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "AsyncRawWatch",
    "AsyncRawWatchSource",
    "AsyncWireList",
    "AsyncWireWatch",
    "RawList",
    "RawWatch",
    "RawWatchSource",
]


@dataclass(frozen=True, slots=True)
class RawList:
    """One list answer: the objects, and the resourceVersion a watch continues from."""

    items: list[dict[str, Any]]
    resource_version: str


class RawWatch(Protocol):
    """An open watch: raw events in order; :meth:`close` ends it, from any thread."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The stream itself."""
        ...

    def __next__(self) -> dict[str, Any]:
        """The next event; StopIteration when the server ended the stream or it was closed."""
        ...

    def close(self) -> None:
        """Release the connection; a read blocked in another thread ends."""
        ...


class AsyncRawWatch(Protocol):
    """:class:`RawWatch` under asyncio."""

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        """The stream itself."""
        ...

    async def __anext__(self) -> dict[str, Any]:
        """The next event; StopAsyncIteration when the stream ended or was closed."""
        ...

    async def aclose(self) -> None:
        """Release the connection."""
        ...


@runtime_checkable
class AsyncWireWatch(Protocol):
    """An asyncio watch that can hand out its events as the wire's bytes, unparsed.

    A proxy relays them as they are (the apiserver's format is the proxy's), instead of
    parsing and encoding every event again.
    """

    def wire_chunks(self) -> AsyncGenerator[bytes, None]:
        """The stream's bytes as they arrive, each chunk ending at a complete line.

        An ``ERROR`` event is relayed like any other line; a broken stream raises
        TransportError. The watch is closed when the iteration ends.
        """
        ...


@runtime_checkable
class AsyncWireList(Protocol):
    """An asyncio store that can hand out a list answer as the wire's bytes, unparsed.

    A proxy relays it as it is (the apiserver's List, with its ``metadata.resourceVersion``)
    instead of decoding every object and encoding it again: for 10,000 jobs that was about
    a second of kuberay-service's CPU per list.
    """

    async def list_wire(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> bytes:
        """The list answer's body (``list_page``'s request), exactly as the server sent it."""
        ...


class RawWatchSource(Protocol):
    """What a watch needs: a list that hands out its resourceVersion, and a raw watch."""

    def list_page(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> RawList:
        """List the matching objects, with the list's resourceVersion."""
        ...

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
    ) -> RawWatch:
        """Open a watch after ``resource_version`` (unset: the current objects as ADDED first)."""
        ...


class AsyncRawWatchSource(Protocol):
    """:class:`RawWatchSource` under asyncio: the same arguments, results and errors."""

    async def list_page(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> RawList:
        """List the matching objects, with the list's resourceVersion."""
        ...

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
    ) -> AsyncRawWatch:
        """Open a watch after ``resource_version`` (unset: the current objects as ADDED first)."""
        ...
