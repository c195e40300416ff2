"""The asyncio transport's raw store: the official client's ``kubernetes.aio`` CustomObjectsApi."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from kubernetes.aio import client as aio_client
from kubernetes.aio.client.exceptions import ApiException

from gridweave_controller._kube_store import FIELD_MANAGER, MERGE_PATCH, as_object, raise_mapped
from gridweave_controller._kube_watch import (
    AsyncKubeWatch,
    answer_error,
    raw_list,
    request_timeout,
    watch_query,
)
from gridweave_controller._raw_watch import RawList
from gridweave_controller.errors import TransportError
from gridweave_controller.store import GROUP, VERSION

__all__ = ["AsyncKubeStore"]

#: No answer (refused, reset, timed out, malformed) or an answer of the apiserver.
_FAILURES = (ApiException, aiohttp.ClientError, asyncio.TimeoutError, ValueError)


class AsyncKubeStore:
    """An :class:`~gridweave_controller.store.AsyncRawStore` over a ``kubernetes.aio`` client."""

    def __init__(self, api_client: aio_client.ApiClient) -> None:
        self.api_client = api_client
        self._api = aio_client.CustomObjectsApi(api_client)

    async def close(self) -> None:
        """Close the connection pool."""
        await self.api_client.close()  # type: ignore[no-untyped-call]

    async def create(self, namespace: str, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create the object."""
        try:
            result = await self._api.create_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, body, field_manager=FIELD_MANAGER
            )
        except _FAILURES as exc:
            raise_mapped(exc, ApiException)
        return as_object(result)

    async def get(self, namespace: str, plural: str, name: str) -> dict[str, Any]:
        """Read one object."""
        try:
            result = await self._api.get_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, name
            )
        except _FAILURES as exc:
            raise_mapped(exc, ApiException)
        return as_object(result)

    async def list(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None,
        *,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """List the objects matching a label and a field selector (one request)."""
        try:
            result = await self._api.list_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                plural,
                label_selector=label_selector,
                field_selector=field_selector,
            )
        except _FAILURES as exc:
            raise_mapped(exc, ApiException)
        items = as_object(result).get("items")
        if not isinstance(items, list):
            raise TransportError("the Kubernetes API answered a list without items")
        return items

    async def list_page(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> RawList:
        """List the matching objects with the list's resourceVersion (one request)."""
        try:
            result = await self._api.list_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                plural,
                label_selector=label_selector,
                field_selector=field_selector,
            )
        except _FAILURES as exc:
            raise_mapped(exc, ApiException)
        return raw_list(result)

    async def list_wire(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> bytes:
        """``list_page``'s request; the answer's body as the apiserver sent it, unparsed."""
        try:
            response = await self._api.list_namespaced_custom_object_without_preload_content(
                GROUP,
                VERSION,
                namespace,
                plural,
                label_selector=label_selector,
                field_selector=field_selector,
            )
            try:
                body = await response.read()
            finally:
                response.release()
        except _FAILURES as exc:
            raise_mapped(exc, ApiException)
        if not 200 <= response.status <= 299:
            raise answer_error(response.status, body, str(response.reason or ""))
        return body

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
    ) -> AsyncKubeWatch:
        """Open a watch: the streaming list call, its status checked before any event."""
        query = watch_query(
            label_selector, field_selector, resource_version, timeout_seconds, allow_bookmarks
        )
        try:
            response = await self._api.list_namespaced_custom_object_without_preload_content(
                GROUP,
                VERSION,
                namespace,
                plural,
                **query,
                _request_timeout=request_timeout(timeout_seconds),
            )
            if not 200 <= response.status <= 299:
                body = await response.read()
                response.release()
                raise answer_error(response.status, body, str(response.reason or ""))
        except _FAILURES as exc:
            raise_mapped(exc, ApiException)
        return AsyncKubeWatch(response)

    async def delete(self, namespace: str, plural: str, name: str) -> None:
        """Delete one object."""
        try:
            await self._api.delete_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        except _FAILURES as exc:
            raise_mapped(exc, ApiException)

    async def patch_status(
        self, namespace: str, plural: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """Merge-patch the status subresource."""
        try:
            result = await self._api.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                namespace,
                plural,
                name,
                patch,
                field_manager=FIELD_MANAGER,
                _content_type=MERGE_PATCH,
            )
        except _FAILURES as exc:
            raise_mapped(exc, ApiException)
        return as_object(result)
