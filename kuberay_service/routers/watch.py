"""``/v1/crd/watch`` and ``/v1/crd/list``: the list-watch pair a watch needs, over HTTP.

``GET /v1/crd/watch/jobs`` (and ``/endpoints``) streams the raw watch of the app's store as
the apiserver does: newline-delimited JSON events ``{"type", "object"}`` (ADDED, MODIFIED,
DELETED, BOOKMARK), flushed as they come, ending when the cluster's stream ends
(``timeoutSeconds``) or the client goes away. A failure once streaming has started ends the
stream with the apiserver's ``ERROR`` event carrying a Status (410 ``Expired`` when the
starting resourceVersion was compacted away, 502 when the cluster could not be reached), so
the proxied client raises the same error the direct one does; a failure before it (a bad
selector, a missing resource type) is a Status body with its HTTP code, like every other
route. ``GET /v1/crd/list/jobs`` answers the raw list with the ``metadata.resourceVersion``
a watch continues from. Objects are relayed raw: from the cluster, the stream's bytes go
out as they came (cut at line ends) and a list's body as it came, never parsed or encoded
again here. Every path needs
a service token (the app's middleware).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from gridweave_controller._watch_wire import encode_event, error_event
from gridweave_controller.aio import AsyncCrdClient
from gridweave_controller.errors import CrdError, Expired, TransportError
from gridweave_controller.store import (
    ENDPOINTS,
    GROUP,
    JOBS,
    VERSION,
    AsyncRawWatch,
    AsyncRawWatchSource,
    AsyncWireList,
    AsyncWireWatch,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1/crd", tags=["watch"])

#: A transport failure behind the proxy ends the stream as a bad gateway (retried).
_TRANSPORT_FAILURE_CODE = 502
_KINDS = {JOBS: "GridweaveJob", ENDPOINTS: "GridweaveEndpoint"}

LabelSelector = Annotated[str | None, Query(alias="labelSelector", max_length=4096)]
FieldSelector = Annotated[str | None, Query(alias="fieldSelector", max_length=4096)]
ResourceVersion = Annotated[
    str | None, Query(alias="resourceVersion", max_length=64, pattern=r"^[0-9]*$")
]
TimeoutSeconds = Annotated[int | None, Query(alias="timeoutSeconds", ge=1, le=86400)]
Bookmarks = Annotated[bool, Query(alias="allowWatchBookmarks")]


def _served(request: Request) -> tuple[AsyncRawWatchSource, str]:
    client: AsyncCrdClient = request.app.state.crd_client
    return client.store, client.namespace


def _failure_code(error: CrdError) -> int | None:
    return _TRANSPORT_FAILURE_CODE if isinstance(error, TransportError) else None


async def _relay(stream: AsyncRawWatch) -> AsyncIterator[bytes]:
    try:
        if isinstance(stream, AsyncWireWatch):  # the cluster's bytes, as they came
            async with aclosing(stream.wire_chunks()) as chunks:
                async for chunk in chunks:
                    yield chunk
        else:
            async for event in stream:
                yield encode_event(event)
    except CrdError as error:
        yield encode_event(error_event(error, _failure_code(error)))
    finally:
        await stream.aclose()


async def _expired_now(error: Expired) -> AsyncIterator[bytes]:
    yield encode_event(error_event(error))


async def _watch(
    request: Request,
    plural: str,
    label_selector: str | None,
    field_selector: str | None,
    resource_version: str | None,
    timeout_seconds: int | None,
    allow_bookmarks: bool,
) -> StreamingResponse:
    store, namespace = _served(request)
    try:
        stream = await store.watch(
            namespace,
            plural,
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version or None,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
        )
    except Expired as error:  # the apiserver answers this one inside a 200 stream
        return StreamingResponse(_expired_now(error), media_type="application/json")
    return StreamingResponse(_relay(stream), media_type="application/json")


async def _list(
    request: Request, plural: str, label_selector: str | None, field_selector: str | None
) -> Response:
    store, namespace = _served(request)
    if isinstance(store, AsyncWireList):  # the cluster's List, as it came
        body = await store.list_wire(
            namespace, plural, label_selector, field_selector=field_selector
        )
        return Response(body, media_type="application/json")
    page = await store.list_page(namespace, plural, label_selector, field_selector=field_selector)
    return JSONResponse(
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": f"{_KINDS[plural]}List",
            "metadata": {"resourceVersion": page.resource_version},
            "items": page.items,
        }
    )


@router.get("/watch/jobs")
async def watch_jobs(
    request: Request,
    label_selector: LabelSelector = None,
    field_selector: FieldSelector = None,
    resource_version: ResourceVersion = None,
    timeout_seconds: TimeoutSeconds = None,
    allow_bookmarks: Bookmarks = True,
) -> StreamingResponse:
    """Stream the GridweaveJob changes after ``resourceVersion`` (NDJSON watch events)."""
    return await _watch(
        request,
        JOBS,
        label_selector,
        field_selector,
        resource_version,
        timeout_seconds,
        allow_bookmarks,
    )


@router.get("/watch/endpoints")
async def watch_endpoints(
    request: Request,
    label_selector: LabelSelector = None,
    field_selector: FieldSelector = None,
    resource_version: ResourceVersion = None,
    timeout_seconds: TimeoutSeconds = None,
    allow_bookmarks: Bookmarks = True,
) -> StreamingResponse:
    """Stream the GridweaveEndpoint changes after ``resourceVersion`` (NDJSON watch events)."""
    return await _watch(
        request,
        ENDPOINTS,
        label_selector,
        field_selector,
        resource_version,
        timeout_seconds,
        allow_bookmarks,
    )


@router.get("/list/jobs")
async def list_jobs(
    request: Request, label_selector: LabelSelector = None, field_selector: FieldSelector = None
) -> Response:
    """The raw GridweaveJob list with the resourceVersion a watch continues from."""
    return await _list(request, JOBS, label_selector, field_selector)


@router.get("/list/endpoints")
async def list_endpoints(
    request: Request, label_selector: LabelSelector = None, field_selector: FieldSelector = None
) -> Response:
    """The raw GridweaveEndpoint list with the resourceVersion a watch continues from."""
    return await _list(request, ENDPOINTS, label_selector, field_selector)
