"""``/v1/signins``: a sign-in code for an existing user's email, then checked once."""

from __future__ import annotations

from fastapi import Request

from faucet_service.routers.common import ClientAddressDep, SessionDep, SettingsDep, internal_router
from faucet_service.sender import wake_mail_sender
from faucet_service.services import signins
from gridweave_clients.faucet.models import (
    SignInCodeRequest,
    SignInCodeResponse,
    SignInVerifiedResponse,
    VerifySignInRequest,
)

__all__ = ["router"]

router = internal_router("/v1/signins", "signins")


@router.post("", status_code=202)
def send_sign_in_code(
    body: SignInCodeRequest,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    address: ClientAddressDep,
) -> SignInCodeResponse:
    """Queue a six-digit sign-in code by email (limited as sign-ups are); few tries, once."""
    answer = signins.send_sign_in_code(
        session, email=body.email, user_id=body.user_id, client_address=address, settings=settings
    )
    wake_mail_sender(request.app)
    return answer


@router.post("/verify")
def verify_sign_in(
    body: VerifySignInRequest, session: SessionDep, settings: SettingsDep, address: ClientAddressDep
) -> SignInVerifiedResponse:
    """Check the code: right, it is spent and the user proved the email."""
    return signins.verify_sign_in(
        session,
        email=body.email,
        user_id=body.user_id,
        code=body.code,
        client_address=address,
        settings=settings,
    )
