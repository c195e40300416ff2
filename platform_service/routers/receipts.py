"""``/v1/receipts``: a job's receipt and what proves it, for the job's owner."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from gridweave_clients.chain import AsyncChainClient
from gridweave_clients.chain.models import ReceiptProofResponse
from gridweave_clients.gateway.models import JobId
from gridweave_runtime.clients import state_dependency
from platform_service.routers.common import JobServicesDep, UserDep
from platform_service.services import receipts

__all__ = ["router"]

router = APIRouter(prefix="/v1/receipts", tags=["receipts"])
ChainDep = Annotated[AsyncChainClient, Depends(state_dependency("chain_client", AsyncChainClient))]


@router.get("/{job_id}")
async def get_receipt(
    job_id: JobId, user: UserDep, services: JobServicesDep, chain: ChainDep
) -> ReceiptProofResponse:
    """The receipt of one of the caller's settled jobs: its chain position, its Merkle path
    and, once its batch is anchored, the CometBFT proof (``gridweave receipt`` verifies it).

    404 for another user's job or none, and, naming the receipt, for a job not settled yet;
    503 when chain_service does not answer.
    """
    return await receipts.get_job_receipt(services, chain, user_id=user.user_id, job_id=job_id)
