"""An endpoint's replica logs for its owner: the gateway's read, behind the owner check."""

from __future__ import annotations

from gridweave_clients.gateway import endpoints as gw
from gridweave_clients.platform.endpoints import EndpointLogsResponse
from platform_service.services.downstream import as_user, downstream_errors
from platform_service.services.endpoints import EndpointServices, get_own_endpoint

__all__ = ["get_endpoint_logs"]


async def get_endpoint_logs(
    services: EndpointServices, *, user_id: str, name: str, lines: int
) -> EndpointLogsResponse:
    """The last ``lines`` of each replica's stdout and stderr of the user's endpoint
    ``name``; another user's, or none, is 404 alike."""
    endpoint = await get_own_endpoint(services, user_id=user_id, name=name)
    with downstream_errors("job_gateway"):
        return await services.gateway.run(
            as_user(gw.get_endpoint_logs(endpoint.id, lines=lines), user_id)
        )
