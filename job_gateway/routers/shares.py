"""``/v1/shares``: each user's weight in the scheduler's fair share, pushed by the platform
(which stores them) after every change and on a timer."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from gridweave_clients.gateway.quotas import SharesRequest, SharesResponse
from gridweave_runtime.auth import callable_by
from gridweave_runtime.clients import state_dependency
from job_gateway.gateway import Gateway

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/shares", tags=["shares"], dependencies=callable_by("platform", "admin")
)
CurrentGateway = Annotated[Gateway, Depends(state_dependency("gateway", Gateway))]


@router.put("")
async def set_shares(body: SharesRequest, gateway: CurrentGateway) -> SharesResponse:
    """Replace every user's weight (a user not named weighs 1) from the next pass on."""
    gateway.scheduler.set_shares(body.weights)
    gateway.loop.poke()  # the order of the waiting requests may have changed
    return SharesResponse(weights=dict(gateway.scheduler.shares))


@router.get("")
async def get_shares(gateway: CurrentGateway) -> SharesResponse:
    """The weights the scheduler orders users by now."""
    return SharesResponse(weights=dict(gateway.scheduler.shares))
