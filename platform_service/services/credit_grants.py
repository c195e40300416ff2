"""Credit grants: an admin gives a user credits, minted by credit_service.

The money moves once, in credit_service's one mint (``mint_credits``), called with the admin
role. The caller's ``Idempotency-Key`` makes the grant replay-safe: the same key for the same
user answers the first grant and mints nothing more, so a double click is one grant.
"""

from __future__ import annotations

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.credit import operations as credit_ops
from gridweave_clients.platform.admin import CreditGrantResponse
from platform_service.services.downstream import as_admin, downstream_errors

__all__ = ["grant_credits", "grant_idempotency_key"]


def grant_idempotency_key(user_id: str, idempotency_key: str) -> str:
    """The key of the mint at credit_service: one per user and caller's key."""
    return f"grant:{user_id}:{idempotency_key}"


async def grant_credits(
    credit: AsyncCreditClient, *, admin_id: str, user_id: str, amount: int, idempotency_key: str
) -> CreditGrantResponse:
    """Mint ``amount`` micro-credits on ``user_id``'s account (once per ``idempotency_key``).

    The user must exist (the caller checks); a key reused with another amount is credit_service's
    409, passed on.
    """
    operation = credit_ops.mint(
        user_id, amount=amount, idempotency_key=grant_idempotency_key(user_id, idempotency_key)
    )
    with downstream_errors("credit_service"):
        minted = await credit.run(as_admin(operation, admin_id))
    return CreditGrantResponse(
        user_id=user_id,
        amount=minted.amount,
        idempotency_key=idempotency_key,
        balance=minted.account.balance,
        available=minted.account.available,
    )
