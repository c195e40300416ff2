"""Sign-up (a code by email) and verification (the code, then the onboarding grant)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from faucet_service.codes import code_matches, code_secret, hash_code, new_code
from faucet_service.errors import (
    CodeExpired,
    CodeLocked,
    CodeNotForUser,
    SignupNotFound,
    SignupPending,
    WrongCode,
)
from faucet_service.mailboxes import mailbox_of
from faucet_service.mailer import verification_email
from faucet_service.models import VerificationModel
from faucet_service.services.grants import grant_response, record_grant, refuse_if_onboarded
from faucet_service.services.minting import mint_pending
from faucet_service.services.outbox import queue_code_email
from faucet_service.services.rate_limits import count_address_request, count_request
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
    mailbox = mailbox_of(email)
    count_address_request(session, client_address=client_address, settings=settings)
    count_request(
        session,
        scope="signup_email",
        subject=mailbox,
        limit=settings.signups_per_email,
        window_seconds=settings.rate_limit_window_seconds,
    )
    refuse_if_onboarded(session, email=mailbox, user_id=user_id)
    code = new_code()
    now = datetime.now(UTC)
    expires_at = now + timedelta(seconds=settings.code_ttl_seconds)
    values = {
        "user_id": user_id,
        "recipient": email,
        "code_hash": hash_code(code_secret(settings), email=mailbox, code=code),
        "expires_at": expires_at,
        "failed_attempts": 0,
        "verified_at": None,
    }
    # one statement, so two sign-ups racing for one email cannot both replace the code
    replaceable = or_(
        VerificationModel.user_id == user_id,
        VerificationModel.expires_at <= now,
        VerificationModel.failed_attempts >= settings.code_max_attempts,
    )
    stored = session.scalar(
        insert(VerificationModel)
        .values(email=mailbox, **values)
        .on_conflict_do_update(index_elements=["email"], set_=values, where=replaceable)
        .returning(VerificationModel.email)
    )
    if stored is None:
        raise SignupPending(field="email")
    message = verification_email(
        recipient=email, code=code, expires_at=expires_at, sender=settings.smtp_from
    )
    delivery = queue_code_email(session, message, settings=settings)
    return SignUpResponse(email=email, user_id=user_id, expires_at=expires_at, delivery=delivery)


def _lock_verification(session: Session, email: str) -> VerificationModel:
    verification = session.scalar(
        select(VerificationModel)
        .where(VerificationModel.email == email)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if verification is None:
        raise SignupNotFound(email=email)
    return verification


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
    mailbox = mailbox_of(email)
    count_address_request(session, client_address=client_address, settings=settings)
    verification = _lock_verification(session, mailbox)
    if verification.user_id != user_id:
        # checked before the code, so it neither spends a try nor tells if the code was right
        raise CodeNotForUser(field="user_id")
    if verification.failed_attempts >= settings.code_max_attempts:
        raise CodeLocked(email=email)
    now = datetime.now(UTC)
    replayed = verification.verified_at is not None
    if not replayed and now >= verification.expires_at:
        raise CodeExpired(email=email)
    secret = code_secret(settings)
    if not code_matches(secret, email=mailbox, code=code, stored_hash=verification.code_hash):
        verification.failed_attempts += 1
        attempts_left = settings.code_max_attempts - verification.failed_attempts
        session.commit()
        raise WrongCode(attempts_left=attempts_left)
    if verification.verified_at is None:
        verification.verified_at = now
    grant = record_grant(
        session,
        email=mailbox,
        user_id=verification.user_id,
        amount=settings.onboarding_grant,
        secret=secret,
    )
    verified_at = verification.verified_at
    # the verification and the pending grant are kept whatever credit_service does next
    session.commit()
    mint_pending(session, grant, credit)
    return VerifyResponse(
        email=email,
        user_id=grant.user_id,
        verified_at=verified_at,
        replayed=replayed,
        grant=grant_response(grant),
    )
