"""``/v1/credits``, ``/v1/usage`` and ``/v1/prices``: the caller's money, its ledger,
refills, what it paid for and what a GPU-second costs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from gridweave_clients.credit.models import LedgerPageResponse
from gridweave_clients.faucet.models import RefillResponse
from gridweave_clients.fields import DatabaseId, UtcDatetime
from gridweave_clients.gateway.models import JobId
from gridweave_clients.metering.models import UsagePageResponse
from gridweave_clients.metering.pricing import PriceTable
from gridweave_clients.platform.models import CreditsResponse
from platform_service.routers.common import (
    ClientAddressDep,
    CreditDep,
    FaucetDep,
    JobServicesDep,
    MeteringDep,
    UserDep,
)
from platform_service.services import account
from platform_service.services.holds import price_table

__all__ = ["router"]

router = APIRouter(tags=["account"])


@router.get("/v1/credits")
async def get_credits(user: UserDep, credit: CreditDep) -> CreditsResponse:
    """Balance, held and available micro-credits."""
    return await account.get_credits(credit, user_id=user.user_id)


@router.get("/v1/credits/ledger")
async def list_credit_ledger(
    user: UserDep,
    credit: CreditDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before_id: Annotated[DatabaseId | None, Query()] = None,
) -> LedgerPageResponse:
    """The caller's ledger: every change of its balance (grants, refills, settlements,
    transfers), newest first; ``next_before_id`` as ``before_id`` for the next page."""
    return await account.list_credit_ledger(
        credit, user_id=user.user_id, limit=limit, before_id=before_id
    )


@router.get("/v1/prices")
async def get_prices(user: UserDep, jobs: JobServicesDep) -> PriceTable:
    """Micro-credits per GPU-second by vendor and VRAM tier: a job or an endpoint replica is
    billed at the first tier of its vendor whose ``max_vram_mb`` covers its VRAM per GPU
    (metering's table; a job holds price x timeout x GPUs)."""
    return await price_table(jobs.prices)


@router.post("/v1/credits/refill", status_code=201)
def request_refill(user: UserDep, faucet: FaucetDep, address: ClientAddressDep) -> RefillResponse:
    """A refill from the faucet while the balance is low (at most one per refill period)."""
    return account.request_refill(faucet, user_id=user.user_id, client_address=address)


@router.get("/v1/usage")
async def list_usage(
    user: UserDep,
    metering: MeteringDep,
    period_from: Annotated[UtcDatetime | None, Query(alias="from")] = None,
    period_to: Annotated[UtcDatetime | None, Query(alias="to")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before_id: Annotated[DatabaseId | None, Query()] = None,
    job_id: Annotated[
        JobId | None, Query(description="Only the record of this job (its hold's reference).")
    ] = None,
) -> UsagePageResponse:
    """The caller's usage that finished in [from, to), newest first, with the totals;
    ``job_id``: only that job's record, however old."""
    return await account.list_usage(
        metering,
        user_id=user.user_id,
        period_from=period_from,
        period_to=period_to,
        limit=limit,
        before_id=before_id,
        job_id=job_id,
    )
