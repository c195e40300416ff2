"""``/v1/signups``: send a verification code, verify it (the onboarding grant follows)."""

from __future__ import annotations

from fastapi import Request

from faucet_service.routers.common import (
    ClientAddressDep,
    CreditDep,
    SessionDep,
    SettingsDep,
    internal_router,
)
from faucet_service.sender import wake_mail_sender
from faucet_service.services import signups
from gridweave_clients.faucet.models import (
    SignUpRequest,
    SignUpResponse,
    VerifyRequest,
    VerifyResponse,
)

__all__ = ["router"]

router = internal_router("/v1/signups", "signups")


@router.post("", status_code=202)
def sign_up(
    body: SignUpRequest,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    address: ClientAddressDep,
) -> SignUpResponse:
    """Queue a six-digit code by email (or keep it in the outbox); few tries, then it expires."""
    answer = signups.sign_up(
        session,
        email=body.email,
        user_id=body.user_id,
        client_address=address,
        settings=settings,
    )
    wake_mail_sender(request.app)
    return answer


@router.post("/verify")
def verify(
    body: VerifyRequest,
    session: SessionDep,
    settings: SettingsDep,
    credit: CreditDep,
    address: ClientAddressDep,
) -> VerifyResponse:
    """Check the code; the first success mints the onboarding grant (replays return it)."""
    return signups.verify_email(
        session,
        email=body.email,
        user_id=body.user_id,
        code=body.code,
        client_address=address,
        settings=settings,
        credit=credit,
    )
