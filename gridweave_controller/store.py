"""The raw object store every transport implements: five apiserver calls on plain dicts.

The typed layer (:mod:`gridweave_controller._flows`: validation, phase machines,
conditions, the read-modify-write loop) is written once against these calls; a transport
only moves raw objects, blocking (:class:`RawStore`) or under asyncio
(:class:`AsyncRawStore`). Implementations raise the errors of
:mod:`gridweave_controller.errors` and hand out objects the caller may keep (no shared
references into the store).
"""

from __future__ import annotations

from typing import Any, Protocol

from gridweave_controller._raw_watch import (
    AsyncRawWatch,
    AsyncRawWatchSource,
    AsyncWireList,
    AsyncWireWatch,
    RawList,
    RawWatch,
    RawWatchSource,
)

__all__ = [
    "ENDPOINTS",
    "GROUP",
    "JOBS",
    "VERSION",
    "AsyncRawStore",
    "AsyncRawWatch",
    "AsyncRawWatchSource",
    "AsyncWireList",
    "AsyncWireWatch",
    "RawList",
    "RawStore",
    "RawWatch",
    "RawWatchSource",
]

GROUP = "gridweave.io"
VERSION = "v1"
JOBS = "gridweavejobs"
ENDPOINTS = "gridweaveendpoints"


class RawStore(RawWatchSource, Protocol):
    """Namespaced custom objects of the ``gridweave.io/v1`` group, apiserver semantics.

    Besides the five calls, a store lists with the list's resourceVersion and watches
    (:class:`RawWatchSource`).
    """

    def create(self, namespace: str, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create the object (``status`` is dropped); raise AlreadyExists or Invalid."""
        ...

    def get(self, namespace: str, plural: str, name: str) -> dict[str, Any]:
        """Read one object; raise NotFound (or CRDNotInstalled)."""
        ...

    def list(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None,
        *,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """List the objects matching a label selector and a field selector.

        Field selectors take ``metadata.name``, ``metadata.namespace`` and the CRDs'
        selectable fields (``spec.userId``), with ``=``, ``==`` or ``!=``; any other field
        is Invalid (the apiserver's 400 "field label not supported").
        """
        ...

    def delete(self, namespace: str, plural: str, name: str) -> None:
        """Delete one object; raise NotFound."""
        ...

    def patch_status(
        self, namespace: str, plural: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """JSON merge patch on the ``/status`` subresource; a stale resourceVersion: Conflict."""
        ...


class AsyncRawStore(AsyncRawWatchSource, Protocol):
    """:class:`RawStore`'s calls under asyncio: the same arguments, results and errors."""

    async def create(self, namespace: str, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create the object (``status`` is dropped); raise AlreadyExists or Invalid."""
        ...

    async def get(self, namespace: str, plural: str, name: str) -> dict[str, Any]:
        """Read one object; raise NotFound (or CRDNotInstalled)."""
        ...

    async def list(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None,
        *,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """List the objects matching a label selector and a field selector."""
        ...

    async def delete(self, namespace: str, plural: str, name: str) -> None:
        """Delete one object; raise NotFound."""
        ...

    async def patch_status(
        self, namespace: str, plural: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """JSON merge patch on the ``/status`` subresource; a stale resourceVersion: Conflict."""
        ...
