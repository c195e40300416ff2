"""``/v1/usage``: record a finished job's or endpoint's usage, read it per user and period."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from gridweave_clients.fields import DatabaseId, PrintableId, UserId, UtcDatetime
from gridweave_clients.metering.models import (
    RecordUsageRequest,
    UsagePageResponse,
    UsageRecordResponse,
)
from gridweave_runtime.auth import callable_by, require_internal_caller
from gridweave_runtime.responses import mark_replayed
from metering_service.routers.common import (
    AsyncConnectionsDep,
    AsyncCreditDep,
    CreditDep,
    SessionDep,
    SettingsDep,
)
from metering_service.services import usage

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/usage", tags=["usage"], dependencies=[Depends(require_internal_caller)]
)
UsageIdPath = Annotated[DatabaseId, Path()]


@router.post("", status_code=201, dependencies=callable_by("gateway"))
async def record_usage(
    body: RecordUsageRequest,
    session: SessionDep,
    settings: SettingsDep,
    credit: CreditDep,
    async_credit: AsyncCreditDep,
    connections: AsyncConnectionsDep,
    response: Response,
) -> UsageRecordResponse:
    """Record a finished job's or endpoint run's usage and settle its hold (200 on a replay)."""
    result, replayed = await usage.record_usage_report(
        session,
        connections,
        request=body,
        price_table=settings.price_table,
        credit=credit,
        async_credit=async_credit,
    )
    if replayed:
        response.status_code = 200
    mark_replayed(response, replayed)
    return result


@router.get("")
def list_usage(
    session: SessionDep,
    user_id: Annotated[UserId, Query()],
    period_from: Annotated[UtcDatetime | None, Query(alias="from")] = None,
    period_to: Annotated[UtcDatetime | None, Query(alias="to")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before_id: Annotated[DatabaseId | None, Query()] = None,
    hold_reference: Annotated[PrintableId | None, Query()] = None,
    endpoint_id: Annotated[PrintableId | None, Query()] = None,
) -> UsagePageResponse:
    """A user's usage that finished in [from, to), newest first, with the period's totals;
    ``hold_reference``: only the record of that hold (an endpoint's billing period);
    ``endpoint_id``: only that endpoint's records (its totals are what it was billed)."""
    return usage.list_user_usage(
        session,
        user_id=user_id,
        period_from=period_from,
        period_to=period_to,
        limit=limit,
        before_id=before_id,
        hold_reference=hold_reference,
        endpoint_id=endpoint_id,
    )


@router.get("/{usage_id}")
def get_usage(usage_id: UsageIdPath, session: SessionDep) -> UsageRecordResponse:
    """One usage record and its settlement."""
    return usage.get_usage_record(session, usage_id=usage_id)


@router.post("/{usage_id}/settle", dependencies=callable_by("admin"))
def settle_usage(
    usage_id: UsageIdPath, session: SessionDep, credit: CreditDep
) -> UsageRecordResponse:
    """Try again to settle a pending or refused record; a settled record is returned as is."""
    return usage.settle_usage(session, usage_id=usage_id, credit=credit)
