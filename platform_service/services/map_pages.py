"""One page of a user's maps: newest first, each with its progress and its workers.

A map has no row of its own: it is its workers' jobs and its manifest in the object store.
Its worker 0 always exists and is created with it, so a page of maps is a page of the
user's worker-0 jobs, cut by the gateway from its informer's cache as a page of jobs is
(the same opaque ``cursor``), each read as ``GET /v1/maps/{id}`` reads it. A map whose
manifest is not written (its submission under way, or undone) is left out of the page.
"""

from __future__ import annotations

import asyncio

from gridweave_clients.gateway import operations as gw_ops
from gridweave_clients.platform.maps import MapListResponse, MapResponse
from platform_service.services.downstream import as_user, downstream_errors
from platform_service.services.jobs import JobServices
from platform_service.services.map_state import map_response
from platform_service.services.maps import read_manifest

__all__ = ["list_map_page"]

#: Maps read at once (each reads all of its workers).
_AT_ONCE = 8


async def list_map_page(
    services: JobServices, *, user_id: str, limit: int, cursor: str | None
) -> MapListResponse:
    """Up to ``limit`` of the user's maps after ``cursor``, newest first, with ``total`` and
    the next page's cursor (None on the last page); a cursor that is not one is a 422
    naming ``cursor`` (from the gateway)."""
    operation = gw_ops.list_job_page(user_id, limit=limit, cursor=cursor, first_map_workers=True)
    with downstream_errors("job_gateway"):
        page = await services.gateway.run(as_user(operation, user_id))
    map_ids = [
        job.map.map_id for job in page.jobs if job.user_id == user_id and job.map is not None
    ]
    limit_reads = asyncio.Semaphore(_AT_ONCE)

    async def read(map_id: str) -> MapResponse | None:
        async with limit_reads:
            manifest = await read_manifest(services.store, map_id)
            if manifest is None or manifest.user_id != user_id:
                return None
            return await map_response(services, manifest)

    found = await asyncio.gather(*(read(map_id) for map_id in map_ids))
    return MapListResponse(
        maps=[found_map for found_map in found if found_map is not None],
        total=page.total if page.total is not None else len(map_ids),
        next_cursor=page.next_cursor,
    )
