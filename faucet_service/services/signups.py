"""Sign-up (a code by email) and verification (the code, then the onboarding grant)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from faucet_service.codes import code_secret
from faucet_service.mailboxes import mailbox_of
from faucet_service.services.email_codes import SIGN_UP, check_code, issue_code
from faucet_service.services.grants import grant_response, record_grant, refuse_if_onboarded
from faucet_service.services.minting import mint_pending
from faucet_service.settings import FaucetSettings
from gridweave_clients.credit import CreditClient
from gridweave_clients.faucet.models import SignUpResponse, VerifyResponse

__all__ = ["sign_up", "verify_email"]


def sign_up(
    session: Session, *, email: str, user_id: str, client_address: str, settings: FaucetSettings
) -> SignUpResponse:
    """Queue a fresh code to ``email`` (replacing any earlier one, tries reset); commits.

    The code, the grant and the per-email limit count per mailbox (``mailboxes``); the
    email goes to the address as given. It is only queued here (the outbox): with an SMTP
    server set, ``faucet_service.sender`` sends it off the request path. A live code
    (unexpired, unlocked) issued to another user is never replaced: otherwise whoever
    signed up last would receive the grant the mailbox's owner verifies.

    Raises:
        RateLimited: too many requests from this address or sign-ups for this mailbox.
        AlreadyOnboarded: the mailbox or the user already had the onboarding grant.
        SignupPending: the mailbox has a live code issued to another user.
    """

    def refuse_onboarded(mailbox: str) -> None:
        refuse_if_onboarded(session, email=mailbox, user_id=user_id)

    issued = issue_code(
        session,
        SIGN_UP,
        email=email,
        user_id=user_id,
        client_address=client_address,
        settings=settings,
        refuse=refuse_onboarded,
    )
    return SignUpResponse(
        email=email, user_id=user_id, expires_at=issued.expires_at, delivery=issued.delivery
    )


def verify_email(
    session: Session,
    *,
    email: str,
    user_id: str,
    code: str,
    client_address: str,
    settings: FaucetSettings,
    credit: CreditClient,
) -> VerifyResponse:
    """Check the code (each wrong one counts), then record and mint the grant; commits.

    The code verifies only for the user it was issued to. A verified email may be verified
    again with its code: the answer is the same grant. Any address of the mailbox finds
    its code (``ann+1@x.com`` verifies the code sent to ``ann@x.com``).

    Raises:
        SignupNotFound, CodeNotForUser, CodeLocked, CodeExpired, WrongCode: no verification.
        AlreadyOnboarded: the user already had a grant under another email.
        CreditUnavailable: the grant is recorded but not minted yet: replay the call.
    """
    checked = check_code(
        session,
        SIGN_UP,
        email=email,
        user_id=user_id,
        code=code,
        client_address=client_address,
        settings=settings,
    )
    grant = record_grant(
        session,
        email=mailbox_of(email),
        user_id=checked.row.user_id,
        amount=settings.onboarding_grant,
        secret=code_secret(settings),
    )
    # the verification and the pending grant are kept whatever credit_service does next
    session.commit()
    mint_pending(session, grant, credit)
    return VerifyResponse(
        email=email,
        user_id=grant.user_id,
        verified_at=checked.spent_at,
        replayed=checked.replayed,
        grant=grant_response(grant),
    )
