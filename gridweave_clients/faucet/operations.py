"""faucet_service's routes as typed operations (sans-IO), each declared once.

None of its writes is replayable: a sign-up sends an email, a wrong code counts against
the code's attempts, a refill is limited per period. A lost answer is raised as
``ServiceUnavailable``; sending the call again is the caller's decision (the faucet
finishes an interrupted grant or refill on the next call).
"""

from __future__ import annotations

import ipaddress
from dataclasses import replace
from typing import Annotated, TypeVar

from pydantic import AfterValidator, Field, validate_call

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.faucet.models import (
    CLIENT_ADDRESS_HEADER,
    Code,
    Email,
    OutboxPageResponse,
    RefillRequest,
    RefillResponse,
    SignInCodeRequest,
    SignInCodeResponse,
    SignInVerifiedResponse,
    SignUpRequest,
    SignUpResponse,
    VerifyRequest,
    VerifyResponse,
    VerifySignInRequest,
)
from gridweave_clients.fields import UserId

__all__ = [
    "list_outbox",
    "request_refill",
    "send_sign_in_code",
    "sign_up",
    "verify",
    "verify_sign_in",
]

T = TypeVar("T")
OutboxLimit = Annotated[int, Field(strict=True, ge=1, le=500)]
#: An IPv4 or IPv6 address, written the canonical way.
ClientAddress = Annotated[str, AfterValidator(lambda text: str(ipaddress.ip_address(text)))]


def _for_address(operation: Operation[T], client_address: str | None) -> Operation[T]:
    if client_address is None:
        return operation
    headers = {CLIENT_ADDRESS_HEADER: client_address}
    return replace(operation, call=replace(operation.call, headers=headers))


@validate_call
def sign_up(
    email: Email, user_id: UserId, *, client_address: ClientAddress | None = None
) -> Operation[SignUpResponse]:
    """Email a six-digit code to ``email`` for ``user_id`` (``client_address``: the end user's)."""
    body = SignUpRequest(email=email, user_id=user_id)
    operation = model_operation("POST", "/v1/signups", SignUpResponse, body=body)
    return _for_address(operation, client_address)


@validate_call
def verify(
    email: Email, user_id: UserId, code: Code, *, client_address: ClientAddress | None = None
) -> Operation[VerifyResponse]:
    """Check the code; the first success mints the onboarding grant (a replay returns it)."""
    body = VerifyRequest(email=email, user_id=user_id, code=code)
    operation = model_operation("POST", "/v1/signups/verify", VerifyResponse, body=body)
    return _for_address(operation, client_address)


@validate_call
def send_sign_in_code(
    email: Email, user_id: UserId, *, client_address: ClientAddress | None = None
) -> Operation[SignInCodeResponse]:
    """Email a six-digit sign-in code to ``email``, an existing user's (rate limited as
    sign-ups are)."""
    body = SignInCodeRequest(email=email, user_id=user_id)
    operation = model_operation("POST", "/v1/signins", SignInCodeResponse, body=body)
    return _for_address(operation, client_address)


@validate_call
def verify_sign_in(
    email: Email, user_id: UserId, code: Code, *, client_address: ClientAddress | None = None
) -> Operation[SignInVerifiedResponse]:
    """Check a sign-in code (each wrong one counts); a right one is spent."""
    body = VerifySignInRequest(email=email, user_id=user_id, code=code)
    operation = model_operation("POST", "/v1/signins/verify", SignInVerifiedResponse, body=body)
    return _for_address(operation, client_address)


@validate_call
def request_refill(
    user_id: UserId, *, client_address: ClientAddress | None = None
) -> Operation[RefillResponse]:
    """Refill ``user_id`` if the balance is below the threshold and the last refill is old."""
    body = RefillRequest(user_id=user_id)
    operation = model_operation("POST", "/v1/refills", RefillResponse, body=body)
    return _for_address(operation, client_address)


@validate_call
def list_outbox(
    *, recipient: Email | None = None, limit: OutboxLimit = 50
) -> Operation[OutboxPageResponse]:
    """The emails kept instead of sent, newest first (role admin)."""
    params = {"limit": str(limit)}
    if recipient is not None:
        params["recipient"] = recipient
    return model_operation("GET", "/v1/outbox", OutboxPageResponse, params=params)
