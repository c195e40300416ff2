"""An endpoint's replica logs: the rules behind ``GET /v1/endpoints/{id}/logs``.

The endpoint must exist (404 otherwise); its replicas' files are read on their nodes by
:mod:`job_gateway.endpoints.replica_logs` in a thread (Ray calls block). A gateway that
serves no endpoints (execution off) or cannot reach Ray answers no replicas and says why.
"""

from __future__ import annotations

import asyncio

from ray.exceptions import RayError

from gridweave_clients.gateway.endpoints import EndpointLogsResponse
from gridweave_controller.operations import AsyncClientBase
from job_gateway.endpoints import replica_logs, serve_control
from job_gateway.services.endpoints import get_endpoint

__all__ = ["read_endpoint_logs"]


async def read_endpoint_logs(
    *, crd: AsyncClientBase, app_prefix: str | None, endpoint_id: str, lines: int
) -> EndpointLogsResponse:
    """The last ``lines`` of each replica's stdout and stderr; ``app_prefix`` None: this
    gateway runs no Serve applications."""
    await get_endpoint(crd=crd, endpoint_id=endpoint_id)
    if app_prefix is None:
        return EndpointLogsResponse(
            replicas=[], lines=lines, message="this gateway serves no endpoints (execution is off)"
        )
    app = serve_control.app_name(endpoint_id, app_prefix)
    try:
        replicas = await asyncio.to_thread(replica_logs.read_replica_logs, app, lines=lines)
    except (RayError, ConnectionError) as exc:
        return EndpointLogsResponse(
            replicas=[], lines=lines, message=f"Ray could not be reached: {exc}"[:500]
        )
    message = None if replicas else "no replica of this endpoint has run in this Ray session"
    return EndpointLogsResponse(replicas=replicas, lines=lines, message=message)
