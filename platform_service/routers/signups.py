"""``/v1/signups`` (public): a code by email, then the user, its first key and the grant."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from gridweave_clients.platform.models import (
    RegisteredUserResponse,
    SignUpRequest,
    SignUpResponse,
    VerifySignUpRequest,
)
from platform_service.routers.common import ClientAddressDep, FaucetDep, HmacKeyDep, SessionDep
from platform_service.services import signups

__all__ = ["router"]

router = APIRouter(prefix="/v1/signups", tags=["signups"])
#: Public: no API key (the OpenAPI document's default security is the key).
PUBLIC: dict[str, Any] = {"security": []}


@router.post("", status_code=202, openapi_extra=PUBLIC)
def sign_up(
    body: SignUpRequest, session: SessionDep, faucet: FaucetDep, address: ClientAddressDep
) -> SignUpResponse:
    """Email a six-digit code (public; the faucet limits tries per email and address)."""
    return signups.sign_up(session, faucet=faucet, email=body.email, client_address=address)


@router.post("/verify", status_code=201, openapi_extra=PUBLIC)
def verify_sign_up(
    body: VerifySignUpRequest,
    session: SessionDep,
    faucet: FaucetDep,
    hmac_key: HmacKeyDep,
    address: ClientAddressDep,
) -> RegisteredUserResponse:
    """Check the code: the new user, its first API key (shown once) and the onboarding grant."""
    return signups.verify_sign_up(
        session,
        faucet=faucet,
        hmac_key=hmac_key,
        email=body.email,
        code=body.code,
        client_address=address,
    )
