"""Codes sent by email, of either purpose: issued, then checked (sign-up and sign-in share this).

One kind of code (``CodeKind``) is one table and its rules. What both share: six digits, an
HMAC stored (keyed with the purpose, so a code of one purpose never matches the other's
hash), the per-address limit and a per-mailbox limit of ``FAUCET_SIGNUPS_PER_EMAIL`` requests
a window, ``FAUCET_CODE_MAX_ATTEMPTS`` wrong tries then it locks, ``FAUCET_CODE_TTL_SECONDS``
to live, and a live code of another user never replaced. What differs: a sign-up code once
verified answers again (a replay), a sign-in code is single use (spent, refused after).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from typing import Literal

from sqlalchemy import or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from faucet_service.codes import code_matches, code_secret, hash_code, new_code
from faucet_service.errors import (
    CodeExpired,
    CodeLocked,
    CodeNotForUser,
    CodeUsed,
    FaucetError,
    SignInCodeNotFound,
    SignupNotFound,
    SignupPending,
    WrongCode,
)
from faucet_service.mailboxes import mailbox_of
from faucet_service.mailer import sign_in_email, verification_email
from faucet_service.models import SignInCodeModel, VerificationModel
from faucet_service.services.outbox import queue_code_email
from faucet_service.services.rate_limits import count_address_request, count_request
from faucet_service.settings import FaucetSettings

__all__ = [
    "SIGN_IN",
    "SIGN_UP",
    "CheckedCode",
    "CodeKind",
    "IssuedCode",
    "check_code",
    "issue_code",
]

CodeModel = VerificationModel | SignInCodeModel


@dataclass(frozen=True)
class CodeKind:
    """One purpose of code: its table, its rate-limit scope, its MAC prefix and its rules."""

    model: type[VerificationModel] | type[SignInCodeModel]
    rate_scope: str
    # in the MAC before the mailbox: a code of one purpose never matches the other's hash
    mac_prefix: str
    # the column a right code sets: ``verified_at`` (sign-up), ``used_at`` (sign-in)
    spent_column: str
    # single use: a spent code is refused (CodeUsed) and may be replaced by anyone;
    # otherwise a spent code checks again (a replay) even past its expiry
    single_use: bool
    email: Callable[..., EmailMessage]
    not_found: Callable[[str], FaucetError]


SIGN_UP = CodeKind(
    model=VerificationModel,
    rate_scope="signup_email",
    mac_prefix="",
    spent_column="verified_at",
    single_use=False,
    email=verification_email,
    not_found=lambda email: SignupNotFound(email=email),
)
SIGN_IN = CodeKind(
    model=SignInCodeModel,
    rate_scope="signin_email",
    mac_prefix="sign-in\x00",
    spent_column="used_at",
    single_use=True,
    email=sign_in_email,
    not_found=lambda email: SignInCodeNotFound(email=email),
)


@dataclass(frozen=True)
class IssuedCode:
    """A code stored and its email queued."""

    expires_at: datetime
    delivery: Literal["smtp", "outbox"]


@dataclass(frozen=True)
class CheckedCode:
    """A right code: its row (locked, spent now or before) and whether it was spent before."""

    row: CodeModel
    spent_at: datetime
    replayed: bool


def issue_code(
    session: Session,
    kind: CodeKind,
    *,
    email: str,
    user_id: str,
    client_address: str,
    settings: FaucetSettings,
    refuse: Callable[[str], None] | None = None,
) -> IssuedCode:
    """Store a fresh code of ``kind`` for ``email``'s mailbox (tries reset), queue its email.

    ``refuse`` is called with the mailbox once the request is counted, before the code is
    stored; it raises to refuse. The code is only queued here (the outbox): with an SMTP
    server set, ``faucet_service.sender`` sends it off the request path.

    Raises:
        RateLimited: too many requests from this address or codes for this mailbox.
        SignupPending: the mailbox has a live code of this kind issued to another user.
    """
    mailbox = mailbox_of(email)
    count_address_request(session, client_address=client_address, settings=settings)
    count_request(
        session,
        scope=kind.rate_scope,
        subject=mailbox,
        limit=settings.signups_per_email,
        window_seconds=settings.rate_limit_window_seconds,
    )
    if refuse is not None:
        refuse(mailbox)
    code = new_code()
    now = datetime.now(UTC)
    expires_at = now + timedelta(seconds=settings.code_ttl_seconds)
    model = kind.model
    values = {
        "user_id": user_id,
        "recipient": email,
        "code_hash": hash_code(code_secret(settings), email=kind.mac_prefix + mailbox, code=code),
        "expires_at": expires_at,
        "failed_attempts": 0,
        kind.spent_column: None,
    }
    # a live code of another user is kept: otherwise whoever asked last would receive what
    # the mailbox's owner proves; one statement, so two requests racing cannot both replace
    replaceable = [
        model.user_id == user_id,
        model.expires_at <= now,
        model.failed_attempts >= settings.code_max_attempts,
    ]
    if kind.single_use:
        replaceable.append(getattr(model, kind.spent_column).is_not(None))
    stored = session.scalar(
        insert(model)
        .values(email=mailbox, **values)
        .on_conflict_do_update(index_elements=["email"], set_=values, where=or_(*replaceable))
        .returning(model.email)
    )
    if stored is None:
        raise SignupPending(field="email")
    message = kind.email(
        recipient=email, code=code, expires_at=expires_at, sender=settings.smtp_from
    )
    return IssuedCode(
        expires_at=expires_at, delivery=queue_code_email(session, message, settings=settings)
    )


def check_code(
    session: Session,
    kind: CodeKind,
    *,
    email: str,
    user_id: str,
    code: str,
    client_address: str,
    settings: FaucetSettings,
) -> CheckedCode:
    """Check ``code`` of ``kind`` (a wrong one counts, committed); a right one is spent.

    The row stays locked for the caller, who commits. Any address of the mailbox finds its
    code (``ann+1@x.com`` checks the code sent to ``ann@x.com``).

    Raises:
        SignupNotFound or SignInCodeNotFound (``kind.not_found``), CodeNotForUser, CodeLocked,
        CodeUsed (single use), CodeExpired, WrongCode.
    """
    mailbox = mailbox_of(email)
    count_address_request(session, client_address=client_address, settings=settings)
    model = kind.model
    row = session.scalar(
        select(model)
        .where(model.email == mailbox)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if row is None:
        raise kind.not_found(email)
    assert isinstance(row, kind.model)
    if row.user_id != user_id:
        # checked before the code, so it neither spends a try nor tells if the code was right
        raise CodeNotForUser(field="user_id")
    if row.failed_attempts >= settings.code_max_attempts:
        raise CodeLocked(email=email)
    spent_at: datetime | None = getattr(row, kind.spent_column)
    if spent_at is not None and kind.single_use:
        raise CodeUsed(email=email)
    now = datetime.now(UTC)
    if spent_at is None and now >= row.expires_at:
        raise CodeExpired(email=email)
    secret = code_secret(settings)
    mac_subject = kind.mac_prefix + mailbox
    if not code_matches(secret, email=mac_subject, code=code, stored_hash=row.code_hash):
        row.failed_attempts += 1
        attempts_left = settings.code_max_attempts - row.failed_attempts
        session.commit()
        raise WrongCode(attempts_left=attempts_left)
    if spent_at is None:
        setattr(row, kind.spent_column, now)
        return CheckedCode(row=row, spent_at=now, replayed=False)
    return CheckedCode(row=row, spent_at=spent_at, replayed=True)
