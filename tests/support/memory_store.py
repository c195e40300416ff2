"""An in-memory ``RawStore`` that behaves like the Kubernetes apiserver for the two CRDs.

What it enforces, as the apiserver does: uid, creationTimestamp and generation 1 on create;
``status`` dropped on create and only written through ``patch_status``; one resourceVersion
counter bumped on every write (a patch that changes nothing is not a write); status writes
never bump generation; a stale resourceVersion is a Conflict; the CRD schemas (defaults,
pruning, validation, the root CEL rule on the name, set-lists, the ``status`` default
applied on every read) from ``k8s/*.yaml``; label selectors and field selectors on the
selectable fields; deep copies in and out. Errors
are built as ``metav1.Status`` dicts and mapped by the same ``error_from_status`` the real
transport uses. ``inject_conflicts(n)`` makes the next n writes fail with Conflict.
"""

from __future__ import annotations

import asyncio
import copy
import re
import threading
import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from gridweave_controller.errors import CrdError, error_from_status, status_body
from gridweave_controller.store import GROUP, RawList
from tests.support.crd_schema import (
    CrdSchema,
    apply_read_defaults,
    check_rules,
    load_schemas,
    normalize,
)
from tests.support.field_selector import FieldSelectorError, parse_field_selector
from tests.support.label_selector import SelectorError, parse_selector
from tests.support.memory_watch import AsyncMemoryWatch, EventLog, MemoryWatch, WatchRequest

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _failure(
    reason: str,
    code: int,
    message: str,
    *,
    name: str | None = None,
    kind: str | None = None,
    causes: list[dict[str, str]] | None = None,
) -> CrdError:
    details: dict[str, Any] = {}
    if name is not None:
        details = {"name": name, "group": GROUP, "kind": kind}
        if causes:
            details["causes"] = causes
    return error_from_status(status_body(code, reason, message, details), code)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class MemoryStore:
    """Custom objects of the Gridweave CRDs in memory, with the apiserver's rules."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        # etcd starts at revision 1: a list of the empty store is at "1", never at "0",
        # which a watch reads as "any version" (the current objects first).
        self._resource_version = 1
        self._pending_conflicts = 0
        self.calls: Counter[str] = Counter()
        #: Every write in resourceVersion order, what watches read (``compact`` trims it).
        self.log = EventLog(self._lock)

    # -- test controls ---------------------------------------------------------------------

    def inject_conflicts(self, count: int) -> None:
        """Make the next ``count`` writes (create excluded) fail with Conflict."""
        with self._lock:
            self._pending_conflicts = count

    def clear(self) -> None:
        """Forget every object and every counter."""
        with self._lock:
            self._objects.clear()
            self._pending_conflicts = 0
            self.calls.clear()
            self.log.forget(self._resource_version)

    def compact(self, up_to_resource_version: str | int) -> None:
        """Forget the history up to that version, like etcd: older watches answer 410."""
        with self._lock:
            self.log.compact(int(up_to_resource_version))

    # -- RawStore ----------------------------------------------------------------------------

    def _crd(self, plural: str) -> CrdSchema:
        crd = load_schemas().get(plural)
        if crd is None:
            raise error_from_status(None, 404, fallback="404 page not found")
        return crd

    def _bump(self) -> str:
        self._resource_version += 1
        return str(self._resource_version)

    def _existing(self, crd: CrdSchema, namespace: str, name: str) -> dict[str, Any]:
        found = self._objects.get((namespace, crd.plural, name))
        if found is None:
            message = f'{crd.plural}.{GROUP} "{name}" not found'
            raise _failure("NotFound", 404, message, name=name, kind=crd.plural)
        return found

    def _invalid(self, crd: CrdSchema, name: str, causes: list[dict[str, str]]) -> CrdError:
        summary = ", ".join(f"{c['field']}: {c['message']}" for c in causes)
        message = f'{crd.kind}.{GROUP} "{name}" is invalid: {summary}'
        return _failure("Invalid", 422, message, name=name, kind=crd.kind, causes=causes)

    def create(self, namespace: str, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create the object; ``status`` is dropped, as with a status subresource."""
        crd = self._crd(plural)
        obj = copy.deepcopy(body)
        metadata = dict(obj.get("metadata") or {})
        name = str(metadata.get("name") or "")
        causes: list[dict[str, str]] = []
        if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f'Invalid value: "{name}": a lowercase RFC 1123 subdomain',
                    "field": "metadata.name",
                }
            )
        if metadata.get("resourceVersion"):
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": "resourceVersion should not be set on objects to be created",
                    "field": "metadata.resourceVersion",
                }
            )
        check_rules(crd.schema, {"metadata": metadata}, "", causes)
        obj.pop("status", None)
        spec = normalize(obj.get("spec"), crd.schema["properties"]["spec"], "spec", causes)
        if "spec" not in obj:
            causes.append(
                {"reason": "FieldValueRequired", "message": "Required value", "field": "spec"}
            )
        if causes:
            raise self._invalid(crd, name, causes)
        with self._lock:
            self.calls["create"] += 1
            key = (namespace, plural, name)
            if key in self._objects:
                message = f'{plural}.{GROUP} "{name}" already exists'
                raise _failure("AlreadyExists", 409, message, name=name, kind=plural)
            metadata.update(
                namespace=namespace,
                uid=str(uuid.uuid4()),
                creationTimestamp=_now(),
                generation=1,
                resourceVersion=self._bump(),
            )
            stored = {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "metadata": metadata,
                "spec": spec,
            }
            self._objects[key] = stored
            self.log.record(namespace, plural, "ADDED", self._read(crd, stored))
            return self._read(crd, stored)

    @staticmethod
    def _read(crd: CrdSchema, stored: dict[str, Any]) -> dict[str, Any]:
        """A copy of a stored object as a read answers it: read defaults applied."""
        return apply_read_defaults(copy.deepcopy(stored), crd.schema)

    def get(self, namespace: str, plural: str, name: str) -> dict[str, Any]:
        """Read one object."""
        crd = self._crd(plural)
        with self._lock:
            self.calls["get"] += 1
            return self._read(crd, self._existing(crd, namespace, name))

    def list(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None,
        *,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """List the objects matching both selectors, ordered by name like the apiserver."""
        crd = self._crd(plural)
        try:
            matches = parse_selector(label_selector)
            fields_match = parse_field_selector(field_selector, crd.selectable_fields)
        except (SelectorError, FieldSelectorError) as exc:
            raise _failure("BadRequest", 400, str(exc)) from exc
        with self._lock:
            self.calls["list"] += 1
            found = [
                self._read(crd, obj)
                for (ns, kind, _), obj in sorted(self._objects.items())
                if ns == namespace
                and kind == plural
                and matches(obj["metadata"].get("labels") or {})
            ]
        return [obj for obj in found if fields_match(obj)]

    def delete(self, namespace: str, plural: str, name: str) -> None:
        """Delete one object (a write: the counter moves)."""
        crd = self._crd(plural)
        with self._lock:
            self.calls["delete"] += 1
            gone = self._existing(crd, namespace, name)
            del self._objects[(namespace, plural, name)]
            gone["metadata"]["resourceVersion"] = self._bump()
            self.log.record(namespace, plural, "DELETED", self._read(crd, gone))

    def patch_status(
        self, namespace: str, plural: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """Merge-patch ``status`` only; a stale ``metadata.resourceVersion`` is a Conflict."""
        crd = self._crd(plural)
        patch = copy.deepcopy(patch)
        with self._lock:
            self.calls["patch_status"] += 1
            stored = self._existing(crd, namespace, name)
            wanted_version = (patch.get("metadata") or {}).get("resourceVersion")
            stale = (
                wanted_version is not None
                and wanted_version != stored["metadata"]["resourceVersion"]
            )
            if stale or self._pending_conflicts > 0:
                if not stale:
                    self._pending_conflicts -= 1
                message = (
                    f'Operation cannot be fulfilled on {plural}.{GROUP} "{name}": the object has '
                    "been modified; please apply your changes to the latest version and try again"
                )
                raise _failure("Conflict", 409, message, name=name, kind=plural)
            causes: list[dict[str, str]] = []
            current = self._read(crd, stored).get("status")
            merged = merge_patch(current, patch.get("status"))
            status = normalize(merged, crd.schema["properties"]["status"], "status", causes)
            if causes:
                raise self._invalid(crd, name, causes)
            # Compared with what is stored, not with what a read shows: like etcd's bytes, a
            # status only defaulted on read differs from the same status written.
            if status != stored.get("status"):
                stored["status"] = status
                stored["metadata"]["resourceVersion"] = self._bump()
                self.log.record(namespace, plural, "MODIFIED", self._read(crd, stored))
            return self._read(crd, stored)

    # -- list-watch ----------------------------------------------------------------------

    def list_page(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> RawList:
        """:meth:`list`, with the resourceVersion the objects were read at."""
        while True:  # a snapshot: no write between reading the version and the objects
            version = self._resource_version
            items = self.list(namespace, plural, label_selector, field_selector=field_selector)
            if self._resource_version == version:
                return RawList(items, str(version))

    def _watch_request(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None,
        field_selector: str | None,
        resource_version: str | None,
        timeout_seconds: int | None,
        allow_bookmarks: bool,
    ) -> WatchRequest:
        crd = self._crd(plural)
        try:
            labels_match = parse_selector(label_selector)
            fields_match = parse_field_selector(field_selector, crd.selectable_fields)
        except (SelectorError, FieldSelectorError) as exc:
            raise _failure("BadRequest", 400, str(exc)) from exc
        initial: list[dict[str, Any]] = []
        if resource_version in (None, "", "0"):  # the current objects first, as ADDED
            page = self.list_page(namespace, plural, label_selector, field_selector=field_selector)
            initial, cursor = page.items, int(page.resource_version)
        elif not resource_version.isdigit():
            message = f"invalid resource version: {resource_version!r}"
            raise _failure("BadRequest", 400, message)
        else:
            cursor = int(resource_version)
        return WatchRequest(
            self.log,
            namespace,
            plural,
            crd.kind,
            labels_match,
            fields_match,
            cursor,
            initial,
            timeout_seconds,
            allow_bookmarks,
        )

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
    ) -> MemoryWatch:
        """Watch the changes after ``resource_version`` (unset or "0": current objects first)."""
        return MemoryWatch(
            self._watch_request(
                namespace,
                plural,
                label_selector,
                field_selector,
                resource_version,
                timeout_seconds,
                allow_bookmarks,
            )
        )


class AsyncMemoryStore:
    """A :class:`MemoryStore` as an ``AsyncRawStore`` (kuberay-service's client in tests).

    Each call first yields to the event loop, as a network call would, so concurrent requests
    interleave between a setter's GET and PATCH and meet Conflicts like on a cluster; then it
    calls ``store``'s method as it is now (a test's spy on it sees every call).
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    async def create(self, namespace: str, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """:meth:`MemoryStore.create`."""
        await asyncio.sleep(0)
        return self.store.create(namespace, plural, body)

    async def get(self, namespace: str, plural: str, name: str) -> dict[str, Any]:
        """:meth:`MemoryStore.get`."""
        await asyncio.sleep(0)
        return self.store.get(namespace, plural, name)

    async def list(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None,
        *,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """:meth:`MemoryStore.list`."""
        await asyncio.sleep(0)
        return self.store.list(namespace, plural, label_selector, field_selector=field_selector)

    async def delete(self, namespace: str, plural: str, name: str) -> None:
        """:meth:`MemoryStore.delete`."""
        await asyncio.sleep(0)
        self.store.delete(namespace, plural, name)

    async def patch_status(
        self, namespace: str, plural: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """:meth:`MemoryStore.patch_status`."""
        await asyncio.sleep(0)
        return self.store.patch_status(namespace, plural, name, patch)

    async def list_page(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> RawList:
        """:meth:`MemoryStore.list_page`."""
        await asyncio.sleep(0)
        return self.store.list_page(
            namespace, plural, label_selector, field_selector=field_selector
        )

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
    ) -> AsyncMemoryWatch:
        """:meth:`MemoryStore.watch`, woken through the event loop."""
        await asyncio.sleep(0)
        return AsyncMemoryWatch(
            self.store._watch_request(
                namespace,
                plural,
                label_selector,
                field_selector,
                resource_version,
                timeout_seconds,
                allow_bookmarks,
            )
        )
