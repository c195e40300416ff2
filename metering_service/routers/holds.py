"""``/v1/holds``, ``/v1/endpoint-holds`` and ``/v1/releases``: the door to credit holds
(metering owns them).

The platform authorizes a job's or a map's holds (``/v1/holds``); the gateway's endpoint
billing asks for each billing period, priced here (``/v1/endpoint-holds``), and lists the
open ones after a restart; the platform (a refused submission, a cancel) and the gateway
(a job that ended without holding a GPU, a period placed ahead and never run) release.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from gridweave_clients.credit.models import HoldResponse, OpenHoldsPageResponse
from gridweave_clients.fields import DatabaseId
from gridweave_clients.metering.models import (
    AuthorizeHoldRequest,
    EndpointPeriodHoldRequest,
    ReleaseHoldRequest,
)
from gridweave_runtime.auth import callable_by
from gridweave_runtime.responses import mark_replayed
from metering_service.routers.common import AsyncCreditDep, SettingsDep
from metering_service.services import holds

__all__ = ["router"]

router = APIRouter(tags=["holds"])


@router.post("/v1/holds", dependencies=callable_by("platform"))
async def authorize_hold(
    body: AuthorizeHoldRequest, credit: AsyncCreditDep, response: Response
) -> HoldResponse:
    """Hold credits for a job, a map's worker or an endpoint's billing period; 402 with the
    figures (or the spending cap it would pass) when they cannot be held."""
    placed = await holds.authorize(
        credit, user_id=body.user_id, reference=body.reference, amount=body.amount
    )
    mark_replayed(response, placed.replayed)
    return HoldResponse.model_validate(placed.model_dump(exclude={"replayed"}))


@router.post("/v1/endpoint-holds", dependencies=callable_by("gateway"))
async def hold_endpoint_period(
    body: EndpointPeriodHoldRequest,
    credit: AsyncCreditDep,
    settings: SettingsDep,
    response: Response,
) -> HoldResponse:
    """Hold one billing period of an endpoint's run at metering's price; 402 with the
    figures (or the spending cap it would pass) when the owner cannot pay."""
    placed = await holds.authorize_period(credit, settings.price_table, body)
    mark_replayed(response, placed.replayed)
    return HoldResponse.model_validate(placed.model_dump(exclude={"replayed"}))


@router.get("/v1/endpoint-holds", dependencies=callable_by("gateway"))
async def list_endpoint_holds(
    credit: AsyncCreditDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 1000,
    after_id: Annotated[DatabaseId | None, Query()] = None,
) -> OpenHoldsPageResponse:
    """The open endpoint holds of every owner, oldest first (``after_id`` pages on)."""
    return await holds.list_endpoint_holds(credit, limit=limit, after_id=after_id)


@router.post("/v1/releases", dependencies=callable_by("platform", "gateway"))
async def release_hold(body: ReleaseHoldRequest, credit: AsyncCreditDep) -> HoldResponse:
    """Give back the whole hold of a reference nothing will settle (settled for 0, once)."""
    return await holds.release(credit, user_id=body.user_id, reference=body.reference)
