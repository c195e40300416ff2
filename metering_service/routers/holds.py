"""``/v1/holds`` and ``/v1/releases``: the door to credit holds (metering owns them).

The platform authorizes (``/v1/holds``); the platform (a refused submission, a cancel) and
the gateway (a job that ended without holding a GPU: nothing to bill) release.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from gridweave_clients.credit.models import HoldResponse
from gridweave_clients.metering.models import AuthorizeHoldRequest, ReleaseHoldRequest
from gridweave_runtime.auth import callable_by
from gridweave_runtime.responses import mark_replayed
from metering_service.routers.common import AsyncCreditDep
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


@router.post("/v1/releases", dependencies=callable_by("platform", "gateway"))
async def release_hold(body: ReleaseHoldRequest, credit: AsyncCreditDep) -> HoldResponse:
    """Give back the whole hold of a reference nothing will settle (settled for 0, once)."""
    return await holds.release(credit, user_id=body.user_id, reference=body.reference)
