"""``/v1/maps``: run one function over many inputs on several GPU workers; its progress,
its chunks' results, cancel."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Path, Query, Response

from gridweave_clients.credit.models import IdempotencyKey
from gridweave_clients.maps import MapId
from gridweave_clients.platform.maps import (
    MAX_MAPS_PAGE,
    NEXT_CHUNK_HEADER,
    MapListResponse,
    MapResponse,
    SubmitMapRequest,
)
from gridweave_clients.platform.models import IDEMPOTENCY_HEADER
from gridweave_clients.platform.results import RESULT_SHA256_HEADER
from gridweave_controller.validation import MAX_MAP_ITEMS
from gridweave_runtime.responses import mark_replayed
from platform_service.routers.common import JobServicesDep, QuotaDep, UserDep
from platform_service.services import map_pages, maps

__all__ = ["CHUNK_MEDIA_TYPE", "router"]

router = APIRouter(prefix="/v1/maps", tags=["maps"])

#: A chunk record's media type: frames of its header and the inputs' pickled values.
CHUNK_MEDIA_TYPE = "application/vnd.gridweave.map-chunk"
#: A records stream's: each chunk's number and digest, then its record.
RECORDS_MEDIA_TYPE = "application/vnd.gridweave.map-records"
#: A records answer holds whole chunks until it passes this many bytes.
RECORDS_BYTES = 64 << 20


@router.post("", status_code=201)
async def submit_map(
    body: SubmitMapRequest,
    user: UserDep,
    services: JobServicesDep,
    response: Response,
    quota: QuotaDep,
    idempotency_key: Annotated[
        IdempotencyKey | None,
        Header(
            alias=IDEMPOTENCY_HEADER,
            description="A retry with the same key answers the same map (200), no new one.",
        ),
    ] = None,
) -> MapResponse:
    """Check the chunks and the image (403, 404), hold price x timeout x GPUs for each
    worker (402), store the function and the inputs, submit the workers (422 no such GPU)."""
    submitted = await maps.submit_map(
        services, user=user, request=body, idempotency_key=idempotency_key, quota=quota
    )
    if submitted.replayed:
        response.status_code = 200
    mark_replayed(response, submitted.replayed)
    return submitted.map


@router.get("")
async def list_maps(
    user: UserDep,
    services: JobServicesDep,
    limit: Annotated[
        int,
        Query(ge=1, le=MAX_MAPS_PAGE, description="One page of this many maps, newest first."),
    ] = 20,
    cursor: Annotated[
        str | None,
        Query(max_length=400, description="The next page: the cursor the last page answered."),
    ] = None,
) -> MapListResponse:
    """One page of the caller's maps, newest first, each with its progress and workers
    (``next_cursor`` asks for the next page; 422 naming ``limit`` or ``cursor``)."""
    return await map_pages.list_map_page(services, user_id=user.user_id, limit=limit, cursor=cursor)


@router.get("/{map_id}")
async def get_map(map_id: MapId, user: UserDep, services: JobServicesDep) -> MapResponse:
    """The map's progress (inputs done and failed) and its workers (404 another user's)."""
    return await maps.get_map(services, user_id=user.user_id, map_id=map_id)


@router.post("/{map_id}/cancel")
async def cancel_map(map_id: MapId, user: UserDep, services: JobServicesDep) -> MapResponse:
    """Stop the map's workers; the chunks already stored stay readable."""
    return await maps.cancel_map(services, user_id=user.user_id, map_id=map_id)


@router.get(
    "/{map_id}/records",
    response_class=Response,
    responses={200: {"content": {RECORDS_MEDIA_TYPE: {}}, "description": "The chunks' records."}},
)
async def get_map_records(
    map_id: MapId,
    user: UserDep,
    services: JobServicesDep,
    start: Annotated[int, Query(ge=0, lt=MAX_MAP_ITEMS, description="The first chunk.")] = 0,
) -> Response:
    """The stored chunks from ``start`` on, in order, each with the SHA-256 its worker
    recorded (a records stream), up to the first chunk not stored or about 64 MB;
    ``X-Gridweave-Next-Chunk`` names the first chunk left out (absent: none is)."""
    data, next_chunk = await maps.map_records(
        services, user_id=user.user_id, map_id=map_id, start=start, max_bytes=RECORDS_BYTES
    )
    headers = {} if next_chunk is None else {NEXT_CHUNK_HEADER: str(next_chunk)}
    return Response(data, media_type=RECORDS_MEDIA_TYPE, headers=headers)


@router.get(
    "/{map_id}/chunks/{chunk}",
    response_class=Response,
    responses={200: {"content": {CHUNK_MEDIA_TYPE: {}}, "description": "The chunk's record."}},
)
async def get_map_chunk(
    map_id: MapId,
    chunk: Annotated[int, Path(ge=0, lt=MAX_MAP_ITEMS)],
    user: UserDep,
    services: JobServicesDep,
) -> Response:
    """A stored chunk's record (its inputs' status, remote tracebacks and pickled values)
    with the SHA-256 its worker recorded in ``X-Gridweave-Result-Sha256`` (409
    ``chunk_not_ready`` while it is not stored)."""
    data, digest = await maps.map_chunk(services, user_id=user.user_id, map_id=map_id, chunk=chunk)
    return Response(data, media_type=CHUNK_MEDIA_TYPE, headers={RESULT_SHA256_HEADER: digest})
