"""The blocking and asyncio clients of credit_service: the operations, bound to a driver."""

from __future__ import annotations

from gridweave_clients.base import AsyncInternalClient, InternalClient, awaiting, blocking
from gridweave_clients.credit import operations as ops

__all__ = ["AsyncCreditClient", "CreditClient"]


class CreditClient(InternalClient):
    """credit_service (port 8400): accounts, ledger, mint/deduct/transfer, holds, settlements.

    Send the caller's ``role`` (``faucet`` and ``admin`` may mint; ``metering``...).
    """

    service = "credit_service"

    open_account = blocking(ops.open_account)
    get_account = blocking(ops.get_account)
    list_ledger = blocking(ops.list_ledger)
    mint = blocking(ops.mint)
    deduct = blocking(ops.deduct)
    transfer = blocking(ops.transfer)
    place_hold = blocking(ops.place_hold)
    get_hold = blocking(ops.get_hold)
    capture_hold = blocking(ops.capture_hold)
    release_hold = blocking(ops.release_hold)
    settle = blocking(ops.settle)
    check_books = blocking(ops.check_books)
    get_spending_limits = blocking(ops.get_spending_limits)
    set_spending_limits = blocking(ops.set_spending_limits)
    set_admin_spending_limits = blocking(ops.set_admin_spending_limits)


class AsyncCreditClient(AsyncInternalClient):
    """credit_service over asyncio: the methods of :class:`CreditClient`, awaited."""

    service = "credit_service"

    open_account = awaiting(ops.open_account)
    get_account = awaiting(ops.get_account)
    list_ledger = awaiting(ops.list_ledger)
    mint = awaiting(ops.mint)
    deduct = awaiting(ops.deduct)
    transfer = awaiting(ops.transfer)
    place_hold = awaiting(ops.place_hold)
    get_hold = awaiting(ops.get_hold)
    capture_hold = awaiting(ops.capture_hold)
    release_hold = awaiting(ops.release_hold)
    settle = awaiting(ops.settle)
    check_books = awaiting(ops.check_books)
    get_spending_limits = awaiting(ops.get_spending_limits)
    set_spending_limits = awaiting(ops.set_spending_limits)
    set_admin_spending_limits = awaiting(ops.set_admin_spending_limits)
