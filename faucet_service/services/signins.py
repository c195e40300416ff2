"""Sign-in codes of existing users: a code by email, then checked once.

The platform knows its users; it asks a code for the email of a user who signed up long
ago, and checks the code the person types. The rules are the sign-up code's: six digits,
an HMAC stored (keyed with the purpose, so a sign-up code never signs in), the per-address
and per-mailbox limits of sign-up (``FAUCET_SIGNUPS_PER_EMAIL`` requests per window), a few
tries, then it locks; and one more: a right code is spent (``used_at``), so it signs in once.
"""

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
    CodeUsed,
    SignInCodeNotFound,
    SignupPending,
    WrongCode,
)
from faucet_service.mailboxes import mailbox_of
from faucet_service.mailer import sign_in_email
from faucet_service.models import SignInCodeModel
from faucet_service.services.outbox import queue_code_email
from faucet_service.services.rate_limits import count_address_request, count_request
from faucet_service.settings import FaucetSettings
from gridweave_clients.faucet.models import SignInCodeResponse, SignInVerifiedResponse

__all__ = ["send_sign_in_code", "verify_sign_in"]


def _mac_subject(mailbox: str) -> str:
    # the purpose is in the MAC: a code of one purpose never matches the other's hash
    return f"sign-in\x00{mailbox}"


def send_sign_in_code(
    session: Session, *, email: str, user_id: str, client_address: str, settings: FaucetSettings
) -> SignInCodeResponse:
    """Queue a fresh sign-in code to ``email`` (replacing an earlier one, tries reset); commits.

    Raises:
        RateLimited: too many requests from this address or codes for this mailbox.
        SignupPending: the mailbox has a live sign-in code issued to another user.
    """
    mailbox = mailbox_of(email)
    count_address_request(session, client_address=client_address, settings=settings)
    count_request(
        session,
        scope="signin_email",
        subject=mailbox,
        limit=settings.signups_per_email,
        window_seconds=settings.rate_limit_window_seconds,
    )
    code = new_code()
    now = datetime.now(UTC)
    expires_at = now + timedelta(seconds=settings.code_ttl_seconds)
    values = {
        "user_id": user_id,
        "recipient": email,
        "code_hash": hash_code(code_secret(settings), email=_mac_subject(mailbox), code=code),
        "expires_at": expires_at,
        "failed_attempts": 0,
        "used_at": None,
    }
    replaceable = or_(
        SignInCodeModel.user_id == user_id,
        SignInCodeModel.expires_at <= now,
        SignInCodeModel.used_at.is_not(None),
        SignInCodeModel.failed_attempts >= settings.code_max_attempts,
    )
    stored = session.scalar(
        insert(SignInCodeModel)
        .values(email=mailbox, **values)
        .on_conflict_do_update(index_elements=["email"], set_=values, where=replaceable)
        .returning(SignInCodeModel.email)
    )
    if stored is None:
        raise SignupPending(field="email")
    message = sign_in_email(
        recipient=email, code=code, expires_at=expires_at, sender=settings.smtp_from
    )
    delivery = queue_code_email(session, message, settings=settings)
    return SignInCodeResponse(
        email=email, user_id=user_id, expires_at=expires_at, delivery=delivery
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
    mailbox = mailbox_of(email)
    count_address_request(session, client_address=client_address, settings=settings)
    row = session.scalar(
        select(SignInCodeModel)
        .where(SignInCodeModel.email == mailbox)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if row is None:
        raise SignInCodeNotFound(email=email)
    if row.user_id != user_id:
        raise CodeNotForUser(field="user_id")
    if row.failed_attempts >= settings.code_max_attempts:
        raise CodeLocked(email=email)
    if row.used_at is not None:
        raise CodeUsed(email=email)
    now = datetime.now(UTC)
    if now >= row.expires_at:
        raise CodeExpired(email=email)
    secret = code_secret(settings)
    if not code_matches(secret, email=_mac_subject(mailbox), code=code, stored_hash=row.code_hash):
        row.failed_attempts += 1
        attempts_left = settings.code_max_attempts - row.failed_attempts
        session.commit()
        raise WrongCode(attempts_left=attempts_left)
    row.used_at = now
    session.commit()
    return SignInVerifiedResponse(email=email, user_id=user_id, used_at=now)
