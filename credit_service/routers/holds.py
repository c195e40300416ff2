"""``/v1/holds`` and ``/v1/settlements``: place, capture, release, settle by reference."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from credit_service.routers.common import AsyncConnectionsDep, NamespaceDep, SessionDep
from credit_service.services import holds
from gridweave_clients.credit.models import (
    CaptureHoldRequest,
    HoldResponse,
    OpenHoldsPageResponse,
    PlaceHoldRequest,
    Reference,
    ReleaseHoldRequest,
    SettleRequest,
)
from gridweave_clients.fields import DatabaseId
from gridweave_runtime.auth import callable_by, require_internal_caller
from gridweave_runtime.responses import json_answer, mark_replayed

__all__ = ["router"]

router = APIRouter(tags=["holds"], dependencies=[Depends(require_internal_caller)])
HoldIdPath = Annotated[DatabaseId, Path()]


@router.post("/v1/holds", dependencies=callable_by("metering"))
def place_hold(
    body: PlaceHoldRequest, namespace: NamespaceDep, session: SessionDep, response: Response
) -> HoldResponse:
    """Set credits aside; 402 with the balance and the amount needed when they are not there."""
    result, replayed = holds.place_hold(
        session,
        caller=namespace,
        user_id=body.user_id,
        amount=body.amount,
        idempotency_key=body.idempotency_key,
        reference=body.reference,
    )
    mark_replayed(response, replayed)
    return result


@router.get("/v1/holds")
def list_open_holds(
    session: SessionDep,
    reference_prefix: Annotated[Reference, Query()],
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    after_id: Annotated[DatabaseId | None, Query()] = None,
) -> OpenHoldsPageResponse:
    """Open holds whose reference starts with ``reference_prefix``, oldest first."""
    return holds.list_open_holds(
        session, reference_prefix=reference_prefix, limit=limit, after_id=after_id
    )


@router.get("/v1/holds/{hold_id}")
def get_hold(hold_id: HoldIdPath, session: SessionDep) -> HoldResponse:
    """A hold and its account."""
    return holds.get_hold(session, hold_id=hold_id)


@router.post("/v1/holds/{hold_id}/capture", dependencies=callable_by("metering"))
def capture_hold(
    hold_id: HoldIdPath,
    body: CaptureHoldRequest,
    namespace: NamespaceDep,
    session: SessionDep,
    response: Response,
) -> HoldResponse:
    """Charge part or all of a hold; the rest goes back to the available balance."""
    result, replayed = holds.capture_hold(
        session,
        caller=namespace,
        hold_id=hold_id,
        amount=body.amount,
        idempotency_key=body.idempotency_key,
    )
    mark_replayed(response, replayed)
    return result


@router.post("/v1/holds/{hold_id}/release", dependencies=callable_by("metering"))
def release_hold(
    hold_id: HoldIdPath,
    body: ReleaseHoldRequest,
    namespace: NamespaceDep,
    session: SessionDep,
    response: Response,
) -> HoldResponse:
    """Give a whole hold back."""
    result, replayed = holds.release_hold(
        session, caller=namespace, hold_id=hold_id, idempotency_key=body.idempotency_key
    )
    mark_replayed(response, replayed)
    return result


# Async and sessionless: one database call on the event loop's own connections. The answer
# is the JSON the database stored under the settlement's key, sent as is: validating and
# serializing it again in Python cost more than the settlement's SQL.
@router.post("/v1/settlements", response_model=HoldResponse, dependencies=callable_by("metering"))
async def settle(body: SettleRequest, connections: AsyncConnectionsDep) -> Response:
    """Settle ``user_id``'s hold placed with ``reference``: exactly once, safe to replay."""
    answer, replayed = await holds.settle_reference(
        connections, reference=body.reference, user_id=body.user_id, amount=body.amount
    )
    return json_answer(answer, replayed)
