"""A user's job receipt, read from chain_service with what proves it.

The receipt itself says whose job it was (``user_id``), so a settled job is answered
without asking the gateway; another user's receipt is answered exactly like a missing job
(404). With no receipt yet the gateway tells a job of this user that is not settled yet
(404 naming the receipt) from no such job (404 naming the job). chain_service not
answering is a 503 naming it: whether a receipt exists cannot be known then.
"""

from __future__ import annotations

from gridweave_clients.chain import AsyncChainClient
from gridweave_clients.chain import operations as chain_ops
from gridweave_clients.chain.models import ReceiptProofResponse
from platform_service.errors import NotFound
from platform_service.services.downstream import as_user, downstream_errors
from platform_service.services.jobs import JobServices, get_own_job

__all__ = ["get_job_receipt"]


async def get_job_receipt(
    services: JobServices, chain: AsyncChainClient, *, user_id: str, job_id: str
) -> ReceiptProofResponse:
    """The receipt of the user's job with its chain position, Merkle path and anchor proof.

    Raises:
        NotFound: no such job of this user, or its receipt is not written yet.
        DownstreamUnavailable: chain_service (or the gateway, asked when there is no
            receipt) does not answer.
    """
    with downstream_errors("chain_service", passed=()):
        listed = await chain.run(as_user(chain_ops.list_subject_receipts(job_id), user_id))
    jobs = [proof for proof in listed.receipts if proof.receipt.kind == "job"]
    if jobs:
        # one receipt per hold reference, and a job's hold reference is its id
        proof = jobs[-1]
        if proof.receipt.user_id != user_id:
            raise NotFound("no such job", resource="job", id=job_id)
        return proof
    await get_own_job(services, user_id=user_id, job_id=job_id)
    raise NotFound(
        "the job's receipt is not written yet: it is written once the job has finished and "
        "its usage is settled",
        resource="receipt",
        id=job_id,
    )
