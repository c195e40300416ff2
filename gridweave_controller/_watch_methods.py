"""``watch_jobs`` and ``watch_endpoints`` as methods of every client, written once.

A client names where its watches read (:meth:`WatchMethods.watch_target`: its store and
namespace, or kuberay-service's watch routes); the typed watch of
:mod:`gridweave_controller.watch` does the rest (list, watch, relist on 410, reconnect).
The blocking clients (:class:`WatchMethods`) hand out a :class:`~gridweave_controller.watch.Watch`,
the asyncio ones (:class:`AsyncWatchMethods`) an
:class:`~gridweave_controller.watch.AsyncWatch` (``async with client.watch_jobs() as
events: async for event in events``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gridweave_controller._objects import user_field_selector
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.store import AsyncRawWatchSource, RawWatchSource
from gridweave_controller.watch import (
    AsyncWatch,
    Watch,
    watch_endpoints,
    watch_endpoints_async,
    watch_jobs,
    watch_jobs_async,
)

__all__ = ["AsyncWatchMethods", "WatchMethods"]


def _options(call: dict[str, Any]) -> dict[str, Any]:
    """A watch method's keywords as the typed watch takes them (``user_id`` a field selector)."""
    fields = (call["field_selector"], user_field_selector(call["user_id"]))
    return {
        "label_selector": call["label_selector"],
        "field_selector": ",".join(part for part in fields if part) or None,
        "resource_version": call["resource_version"],
        "known": call["known"],
        "timeout_seconds": call["timeout_seconds"],
    }


class WatchMethods:
    """The watches of a blocking client."""

    def watch_target(self) -> tuple[RawWatchSource, str]:
        """Where this client's watches read: a watch source and a namespace."""
        raise NotImplementedError

    def watch_jobs(
        self,
        label_selector: str | None = None,
        *,
        user_id: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        known: Iterable[Job] = (),
        timeout_seconds: float | None = None,
    ) -> Watch[Job]:
        """Follow jobs as they change: ADDED, MODIFIED, DELETED and BOOKMARK events.

        Without ``resource_version`` the jobs are listed first (ADDED, then a BOOKMARK);
        with it, only the changes after that version come, ``known`` being what the caller
        holds at it. A 410 relists and hands out the differences; nothing is lost or
        repeated. Close the watch (or use it as a context manager) to stop.
        """
        source, namespace = self.watch_target()
        return watch_jobs(source, namespace, **_options(locals()))

    def watch_endpoints(
        self,
        label_selector: str | None = None,
        *,
        user_id: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        known: Iterable[Endpoint] = (),
        timeout_seconds: float | None = None,
    ) -> Watch[Endpoint]:
        """Follow endpoints as they change, like :meth:`watch_jobs`."""
        source, namespace = self.watch_target()
        return watch_endpoints(source, namespace, **_options(locals()))


class AsyncWatchMethods:
    """The watches of an asyncio client (plain methods returning an async watch)."""

    def watch_target(self) -> tuple[AsyncRawWatchSource, str]:
        """Where this client's watches read: an asyncio watch source and a namespace."""
        raise NotImplementedError

    def watch_jobs(
        self,
        label_selector: str | None = None,
        *,
        user_id: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        known: Iterable[Job] = (),
        timeout_seconds: float | None = None,
    ) -> AsyncWatch[Job]:
        """Follow jobs as they change: :meth:`WatchMethods.watch_jobs`, iterated with async for."""
        source, namespace = self.watch_target()
        return watch_jobs_async(source, namespace, **_options(locals()))

    def watch_endpoints(
        self,
        label_selector: str | None = None,
        *,
        user_id: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        known: Iterable[Endpoint] = (),
        timeout_seconds: float | None = None,
    ) -> AsyncWatch[Endpoint]:
        """Follow endpoints as they change, like :meth:`watch_jobs`."""
        source, namespace = self.watch_target()
        return watch_endpoints_async(source, namespace, **_options(locals()))
