"""The dashboard's sessions: started from an API key, checked on each cookie request, ended.

A registered user may also sign in with an email code: the faucet sends a sign-in code
(limited per address and per mailbox as sign-ups are) and checks it once; such a session
has no key and ends by time or sign-out. An email not yet verified signs in with its
sign-up code instead (which finishes the sign-up).

The cookie's token and the CSRF token are 32 random bytes each; only their HMAC-SHA256
(the API keys' HMAC key) is stored, so the table alone cannot replay a session. A session
lives ``PLATFORM_SESSION_HOURS`` at most, ends at sign-out, and ends with the key it was
started with (revoking that key signs its browsers out). Expired and ended sessions are
deleted at the next sign-in (:func:`purge_sessions`). A write made with the cookie must
carry the CSRF token in ``X-CSRF-Token``: a page of another origin can make the browser send
the cookie (were SameSite ever relaxed) but cannot read the token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from gridweave_clients.faucet import FaucetClient
from gridweave_clients.platform.models import NewApiKeyResponse
from gridweave_clients.platform.sessions import (
    SessionResponse,
    SignInCodeResponse,
    SignInRequest,
)
from gridweave_runtime.errors import InvalidRequest
from platform_service.errors import NotAuthenticated, NotFound
from platform_service.models import ApiKeyModel, UserModel, WebSessionModel
from platform_service.services.downstream import USER_FACING, downstream_errors
from platform_service.services.keys import AuthenticatedUser, authenticate
from platform_service.services.signups import verify_sign_up
from platform_service.services.users import get_user, user_response

__all__ = [
    "NewWebSession",
    "SessionUser",
    "SignedIn",
    "end_session",
    "find_session_user",
    "purge_sessions",
    "send_sign_in_code",
    "sign_in",
    "start_session",
]

_TOKEN_BYTES = 32
#: The faucet's refusals a person signing in acts on: a wrong (400), locked or foreign (403)
#: code, none sent (404), a mailbox another's live code holds (409), an expired or used code
#: (410), too many tries (429).
_FAUCET_REFUSALS = USER_FACING | {403, 404}


@dataclass(frozen=True, slots=True)
class NewWebSession:
    """What the browser gets: the cookie's token and the CSRF token (shown once)."""

    token: str
    csrf_token: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class SessionUser:
    """The user of a live session and how to check its CSRF token."""

    user: AuthenticatedUser
    csrf_hash: str

    def csrf_matches(self, hmac_key: bytes, presented: str | None) -> bool:
        """Whether ``presented`` is this session's CSRF token (constant-time)."""
        if not presented:
            return False
        return hmac.compare_digest(_hash(hmac_key, presented), self.csrf_hash)


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A sign-in: the cookie's token and the answer (the CSRF token in it)."""

    token: str
    answer: SessionResponse


def _hash(hmac_key: bytes, token: str) -> str:
    return hmac.new(hmac_key, b"web session " + token.encode(), hashlib.sha256).hexdigest()


def purge_sessions(session: Session, *, now: datetime) -> int:
    """Delete the sessions that expired or were ended before ``now`` (flushed, not
    committed); how many went. No request can use them again: they are only rows."""
    result = session.execute(
        delete(WebSessionModel).where(
            or_(WebSessionModel.expires_at <= now, WebSessionModel.ended_at.is_not(None))
        )
    )
    session.flush()
    return int(getattr(result, "rowcount", 0) or 0)


def start_session(
    session: Session, *, hmac_key: bytes, user: AuthenticatedUser, lifetime: timedelta
) -> NewWebSession:
    """A new session for ``user``, tied to the key it signed in with (flushed, not
    committed); the sessions that expired or ended meanwhile are purged with it, so the
    table holds only live ones and those since the last sign-in."""
    purge_sessions(session, now=datetime.now(UTC))
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    csrf_token = secrets.token_urlsafe(_TOKEN_BYTES)
    expires_at = datetime.now(UTC) + lifetime
    session.add(
        WebSessionModel(
            token_hash=_hash(hmac_key, token),
            csrf_hash=_hash(hmac_key, csrf_token),
            user_id=user.user_id,
            key_id=user.key_id,
            expires_at=expires_at,
        )
    )
    session.flush()
    return NewWebSession(token=token, csrf_token=csrf_token, expires_at=expires_at)


def find_session_user(session: Session, *, hmac_key: bytes, token: str) -> SessionUser | None:
    """The user of the live session ``token`` names; None when unknown, ended or expired, or
    when its key was revoked."""
    if not token or len(token) > 200:
        return None
    row = session.execute(
        select(UserModel.id, UserModel.role, WebSessionModel.key_id, WebSessionModel.csrf_hash)
        .join(UserModel, UserModel.id == WebSessionModel.user_id)
        .outerjoin(ApiKeyModel, ApiKeyModel.key_id == WebSessionModel.key_id)
        .where(
            WebSessionModel.token_hash == _hash(hmac_key, token),
            WebSessionModel.ended_at.is_(None),
            WebSessionModel.expires_at > datetime.now(UTC),
            # a session of a key ends with the key; one of an email code has none
            or_(WebSessionModel.key_id.is_(None), ApiKeyModel.revoked_at.is_(None)),
        )
    ).one_or_none()
    if row is None:
        return None
    user_id, role, key_id, csrf_hash = row
    return SessionUser(AuthenticatedUser(user_id=user_id, role=role, key_id=key_id), csrf_hash)


def end_session(session: Session, *, hmac_key: bytes, token: str) -> bool:
    """Sign out: the session ``token`` names ends now (committed); False when none was live."""
    result = session.execute(
        update(WebSessionModel)
        .where(
            WebSessionModel.token_hash == _hash(hmac_key, token),
            WebSessionModel.ended_at.is_(None),
        )
        .values(ended_at=datetime.now(UTC))
    )
    session.commit()
    return bool(getattr(result, "rowcount", 0))


def _registered_user(session: Session, email: str) -> UserModel | None:
    """The verified user of ``email``, if there is one."""
    return session.scalar(
        select(UserModel).where(UserModel.email == email, UserModel.verified_at.is_not(None))
    )


def send_sign_in_code(
    session: Session, *, faucet: FaucetClient, email: str, client_address: str | None
) -> SignInCodeResponse:
    """Have the faucet email a sign-in code to the registered user of ``email``; 404 when
    no user signed up with it (sign up instead)."""
    user = _registered_user(session, email)
    if user is None:
        raise NotFound("no user signed up with this email: sign up first", resource="user")
    with downstream_errors("faucet_service", passed=_FAUCET_REFUSALS):
        sent = faucet.send_sign_in_code(email, user.id, client_address=client_address)
    return SignInCodeResponse(email=sent.email, expires_at=sent.expires_at, delivery=sent.delivery)


def _user_of_email_code(
    session: Session,
    *,
    faucet: FaucetClient,
    hmac_key: bytes,
    email: str,
    code: str,
    client_address: str | None,
) -> tuple[AuthenticatedUser, NewApiKeyResponse | None]:
    """A registered user's sign-in code checked (the session has no key); else the sign-up's
    code verified (the new user's first key is the session's and the answer's)."""
    registered = _registered_user(session, email)
    if registered is not None:
        with downstream_errors("faucet_service", passed=_FAUCET_REFUSALS):
            faucet.verify_sign_in(email, registered.id, code, client_address=client_address)
        return AuthenticatedUser(user_id=registered.id, role=registered.role, key_id=None), None
    signed_up = verify_sign_up(
        session,
        faucet=faucet,
        hmac_key=hmac_key,
        email=email,
        code=code,
        client_address=client_address,
    )
    first_key = signed_up.api_key
    user = AuthenticatedUser(
        user_id=signed_up.user.user_id, role=signed_up.user.role, key_id=first_key.key_id
    )
    return user, first_key


def sign_in(
    session: Session,
    *,
    faucet: FaucetClient,
    hmac_key: bytes,
    request: SignInRequest,
    lifetime: timedelta,
    client_address: str | None,
) -> SignedIn:
    """A session from an API key, or from an email code: a registered user's sign-in code, or
    a sign-up's code (which verifies the sign-up: the new user's first key is in the
    answer); committed."""
    first_key = None
    if request.api_key is not None:
        if request.email is not None or request.code is not None:
            raise InvalidRequest("api_key", "give api_key, or email and code, not both")
        user = authenticate(session, hmac_key=hmac_key, presented=request.api_key)
        if user is None:
            raise NotAuthenticated("this API key is malformed, unknown or revoked")
    else:
        if request.email is None:
            raise InvalidRequest("email", "give api_key, or email and the code sent to it")
        if request.code is None:
            raise InvalidRequest("code", "the code emailed to this address is required")
        user, first_key = _user_of_email_code(
            session,
            faucet=faucet,
            hmac_key=hmac_key,
            email=request.email,
            code=request.code,
            client_address=client_address,
        )
    started = start_session(session, hmac_key=hmac_key, user=user, lifetime=lifetime)
    answer = SessionResponse(
        user=user_response(get_user(session, user.user_id)),
        csrf_token=started.csrf_token,
        expires_at=started.expires_at,
        api_key=first_key,
    )
    session.commit()
    return SignedIn(token=started.token, answer=answer)
