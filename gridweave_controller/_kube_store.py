"""The direct transport's raw store: the official client's ``CustomObjectsApi``."""

from __future__ import annotations

from typing import Any, NoReturn

from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from gridweave_controller._kube_watch import KubeWatch, raw_list, read_timeout, watch_query
from gridweave_controller._raw_watch import RawList
from gridweave_controller.errors import TransportError, error_from_status, parse_status_body
from gridweave_controller.store import GROUP, VERSION

MERGE_PATCH = "application/merge-patch+json"
#: Who wrote what, in ``metadata.managedFields``: the writes of the typed client.
FIELD_MANAGER = "gridweave-controller"
#: A watch request that gets no connection within this is a TransportError (then retried).
WATCH_CONNECT_TIMEOUT_S = 10.0


def raise_mapped(exc: Exception, answer: type[Exception] = ApiException) -> NoReturn:
    """Raise the error an apiserver answer's Status names, else TransportError.

    Only ``answer`` (the client's ``ApiException``: the blocking one by default) carries an
    answer of the apiserver, its HTTP status and body. Anything else, even an HTTP library
    error with a status of its own (a malformed response, a proxy refusing the tunnel), is
    no answer of the apiserver: TransportError.
    """
    if isinstance(exc, answer):
        code = getattr(exc, "status", None) or 0
        status = parse_status_body(getattr(exc, "body", None))
        fallback = str(getattr(exc, "reason", "") or "")
        if code:
            raise error_from_status(status, code, fallback=fallback) from exc
    raise TransportError(f"request to the Kubernetes API failed: {exc!r}") from exc


def as_object(value: object) -> dict[str, Any]:
    """The apiserver's answer as an object; TransportError if it is anything else."""
    if not isinstance(value, dict):
        raise TransportError(f"the Kubernetes API answered {type(value).__name__}, not an object")
    return value


class KubeStore:
    """A :class:`~gridweave_controller.store.RawStore` over a Kubernetes ``ApiClient``."""

    def __init__(self, api_client: k8s_client.ApiClient) -> None:
        self.api_client = api_client
        self._api = k8s_client.CustomObjectsApi(api_client)

    def close(self) -> None:
        """Close the connection pool."""
        self.api_client.close()  # type: ignore[no-untyped-call]

    def create(self, namespace: str, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create the object."""
        try:
            result = self._api.create_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, body, field_manager=FIELD_MANAGER
            )
        except (ApiException, HTTPError) as exc:
            raise_mapped(exc)
        return as_object(result)

    def get(self, namespace: str, plural: str, name: str) -> dict[str, Any]:
        """Read one object."""
        try:
            result = self._api.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        except (ApiException, HTTPError) as exc:
            raise_mapped(exc)
        return as_object(result)

    def list(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None,
        *,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """List the objects matching a label and a field selector (one request)."""
        try:
            result = self._api.list_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                plural,
                label_selector=label_selector,
                field_selector=field_selector,
            )
        except (ApiException, HTTPError) as exc:
            raise_mapped(exc)
        items = as_object(result).get("items")
        if not isinstance(items, list):
            raise TransportError("the Kubernetes API answered a list without items")
        return items

    def list_page(
        self,
        namespace: str,
        plural: str,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> RawList:
        """List the matching objects with the list's resourceVersion (one request)."""
        try:
            result = self._api.list_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                plural,
                label_selector=label_selector,
                field_selector=field_selector,
            )
        except (ApiException, HTTPError) as exc:
            raise_mapped(exc)
        return raw_list(result)

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
    ) -> KubeWatch:
        """Open a watch: the streaming list call, its status checked before any event."""
        query = watch_query(
            label_selector, field_selector, resource_version, timeout_seconds, allow_bookmarks
        )
        try:
            response = self._api.list_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                plural,
                **query,
                _preload_content=False,
                _request_timeout=(WATCH_CONNECT_TIMEOUT_S, read_timeout(timeout_seconds)),
            )
        except (ApiException, HTTPError) as exc:
            raise_mapped(exc)
        return KubeWatch(response)

    def delete(self, namespace: str, plural: str, name: str) -> None:
        """Delete one object."""
        try:
            self._api.delete_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        except (ApiException, HTTPError) as exc:
            raise_mapped(exc)

    def patch_status(
        self, namespace: str, plural: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """Merge-patch the status subresource."""
        try:
            result = self._api.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                namespace,
                plural,
                name,
                patch,
                field_manager=FIELD_MANAGER,
                _content_type=MERGE_PATCH,
            )
        except (ApiException, HTTPError) as exc:
            raise_mapped(exc)
        return as_object(result)
