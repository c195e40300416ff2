"""Sign-in codes of existing users: a code by email, then checked once.

The platform knows its users; it asks a code for the email of a user who signed up long
ago, and checks the code the person types. The rules are the sign-up code's
(``services.email_codes``: six digits, an HMAC keyed with the purpose, so a sign-up code never
signs in, the per-address and per-mailbox limits of sign-up, ``FAUCET_SIGNUPS_PER_EMAIL``
requests per window, a few tries, then it locks); and one more: a right code is spent
(``used_at``), so it signs in once.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from faucet_service.services.email_codes import SIGN_IN, check_code, issue_code
from faucet_service.settings import FaucetSettings
from gridweave_clients.faucet.models import SignInCodeResponse, SignInVerifiedResponse

__all__ = ["send_sign_in_code", "verify_sign_in"]


def send_sign_in_code(
    session: Session, *, email: str, user_id: str, client_address: str, settings: FaucetSettings
) -> SignInCodeResponse:
    """Queue a fresh sign-in code to ``email`` (replacing an earlier one, tries reset); commits.

    Raises:
        RateLimited: too many requests from this address or codes for this mailbox.
        SignupPending: the mailbox has a live sign-in code issued to another user.
    """
    issued = issue_code(
        session,
        SIGN_IN,
        email=email,
        user_id=user_id,
        client_address=client_address,
        settings=settings,
    )
    return SignInCodeResponse(
        email=email, user_id=user_id, expires_at=issued.expires_at, delivery=issued.delivery
    )


def verify_sign_in(
    session: Session,
    *,
    email: str,
    user_id: str,
    code: str,
    client_address: str,
    settings: FaucetSettings,
) -> SignInVerifiedResponse:
    """Check the sign-in code (each wrong one counts); a right one is spent; commits.

    Raises:
        SignInCodeNotFound, CodeNotForUser, CodeLocked, CodeUsed, CodeExpired, WrongCode.
    """
    checked = check_code(
        session,
        SIGN_IN,
        email=email,
        user_id=user_id,
        code=code,
        client_address=client_address,
        settings=settings,
    )
    session.commit()
    return SignInVerifiedResponse(email=email, user_id=user_id, used_at=checked.spent_at)
