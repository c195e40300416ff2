"""The blocking and asyncio clients of faucet_service."""

from __future__ import annotations

from gridweave_clients.base import AsyncInternalClient, InternalClient, awaiting, blocking
from gridweave_clients.faucet import operations as ops

__all__ = ["AsyncFaucetClient", "FaucetClient"]


class FaucetClient(InternalClient):
    """faucet_service (port 8500): email verification, onboarding grants, refills, outbox."""

    service = "faucet_service"

    sign_up = blocking(ops.sign_up)
    verify = blocking(ops.verify)
    send_sign_in_code = blocking(ops.send_sign_in_code)
    verify_sign_in = blocking(ops.verify_sign_in)
    request_refill = blocking(ops.request_refill)
    list_outbox = blocking(ops.list_outbox)


class AsyncFaucetClient(AsyncInternalClient):
    """faucet_service over asyncio: the methods of :class:`FaucetClient`, awaited."""

    service = "faucet_service"

    sign_up = awaiting(ops.sign_up)
    verify = awaiting(ops.verify)
    send_sign_in_code = awaiting(ops.send_sign_in_code)
    verify_sign_in = awaiting(ops.verify_sign_in)
    request_refill = awaiting(ops.request_refill)
    list_outbox = awaiting(ops.list_outbox)
