"""A user's money and usage, read from credit_service and metering_service."""

from __future__ import annotations

from datetime import datetime

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.credit import operations as credit_ops
from gridweave_clients.credit.models import LedgerPageResponse
from gridweave_clients.errors import NotFound
from gridweave_clients.faucet import FaucetClient
from gridweave_clients.faucet.models import RefillResponse
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering import operations as metering_ops
from gridweave_clients.metering.models import UsagePageResponse
from gridweave_clients.platform.models import CreditsResponse
from platform_service.services.downstream import USER_FACING, as_user, downstream_errors

__all__ = ["get_credits", "list_credit_ledger", "list_usage", "request_refill"]


async def get_credits(credit: AsyncCreditClient, *, user_id: str) -> CreditsResponse:
    """Balance, held and available micro-credits (all 0 before the first credit)."""
    with downstream_errors("credit_service", passed=()):
        try:
            account = await credit.run(as_user(credit_ops.get_account(user_id), user_id))
        except NotFound:
            return CreditsResponse(user_id=user_id, balance=0, held=0, available=0)
    return CreditsResponse(
        user_id=user_id,
        balance=account.balance,
        held=account.held,
        available=account.available,
    )


async def list_credit_ledger(
    credit: AsyncCreditClient, *, user_id: str, limit: int, before_id: int | None
) -> LedgerPageResponse:
    """The user's ledger entries (every credit and debit), newest first; none before the
    first credit."""
    operation = credit_ops.list_ledger(user_id, limit=limit, before_id=before_id)
    with downstream_errors("credit_service", passed=()):
        try:
            return await credit.run(as_user(operation, user_id))
        except NotFound:
            return LedgerPageResponse(user_id=user_id, entries=[], next_before_id=None)


async def list_usage(
    metering: AsyncMeteringClient,
    *,
    user_id: str,
    period_from: datetime | None,
    period_to: datetime | None,
    limit: int,
    before_id: int | None,
    job_id: str | None = None,
) -> UsagePageResponse:
    """The user's usage records that finished in [from, to), newest first, and the totals;
    with ``job_id``, only that job's (a job's hold is placed with its job id)."""
    operation = metering_ops.list_usage(
        user_id,
        period_from=period_from,
        period_to=period_to,
        limit=limit,
        before_id=before_id,
        hold_reference=job_id,
    )
    with downstream_errors("metering_service"):
        return await metering.run(as_user(operation, user_id))


def request_refill(
    faucet: FaucetClient, *, user_id: str, client_address: str | None
) -> RefillResponse:
    """A refill from the faucet when the balance is low and the last one old enough."""
    with downstream_errors("faucet_service", passed=USER_FACING | {403}):
        return faucet.request_refill(user_id, client_address=client_address)
