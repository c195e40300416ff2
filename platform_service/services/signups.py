"""Sign-up through the faucet: a code by email, then the user, its first key and the grant.

The user row exists from the first request on (unverified, no key), so every retry and the
faucet's code all name one user id. Verifying runs under the row's lock: the faucet checks
the code (its refusals, a wrong code with the tries left, a locked or expired code, pass
through), the onboarding grant is minted, then the user is marked verified and its first
API key issued, shown once. A faucet answer lost before the platform committed is finished
by verifying again with the same code (the faucet replays it); a user already verified gets
409: a code never issues a second key.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gridweave_clients.faucet import FaucetClient
from gridweave_clients.platform.models import RegisteredUserResponse, SignUpResponse
from platform_service.errors import AlreadyRegistered, NotFound
from platform_service.models import Role, UserModel
from platform_service.services.downstream import USER_FACING, downstream_errors
from platform_service.services.keys import issue_api_key
from platform_service.services.users import new_user_id, user_response

__all__ = ["sign_up", "verify_sign_up"]

#: The faucet's refusals a person signing up acts on: a wrong (400), locked or foreign
#: (403) code, no code sent (404), a pending or used email (409), an expired code (410),
#: too many tries (429).
_FAUCET_REFUSALS = USER_FACING | {403, 404}
_FIRST_KEY_NAME = "first key"


def _signing_up_user(session: Session, email: str) -> UserModel:
    """The unverified user of ``email``, created (and committed) on the first request."""
    user = session.scalar(select(UserModel).where(UserModel.email == email))
    if user is None:
        session.add(UserModel(id=new_user_id(), email=email, role=Role.USER))
        try:
            session.commit()
        except IntegrityError:  # the same email, signing up concurrently: use that row
            session.rollback()
        user = session.scalar(select(UserModel).where(UserModel.email == email))
        assert user is not None
    if user.verified_at is not None:
        raise AlreadyRegistered(field="email")
    return user


def sign_up(
    session: Session, *, faucet: FaucetClient, email: str, client_address: str | None
) -> SignUpResponse:
    """Have the faucet send a code to ``email``; 409 when the email is registered already."""
    user = _signing_up_user(session, email)
    with downstream_errors("faucet_service", passed=_FAUCET_REFUSALS):
        sent = faucet.sign_up(email, user.id, client_address=client_address)
    return SignUpResponse(email=sent.email, expires_at=sent.expires_at, delivery=sent.delivery)


def verify_sign_up(
    session: Session,
    *,
    faucet: FaucetClient,
    hmac_key: bytes,
    email: str,
    code: str,
    client_address: str | None,
) -> RegisteredUserResponse:
    """Check the code with the faucet; the user, its first key (shown once) and the grant."""
    user = session.scalar(select(UserModel).where(UserModel.email == email).with_for_update())
    if user is None:
        raise NotFound("no sign-up for this email: ask for a code first", resource="signup")
    if user.verified_at is not None:
        raise AlreadyRegistered(field="email")
    with downstream_errors("faucet_service", passed=_FAUCET_REFUSALS):
        verified = faucet.verify(email, user.id, code, client_address=client_address)
    user.verified_at = datetime.now(UTC)
    key = issue_api_key(session, hmac_key=hmac_key, user_id=user.id, name=_FIRST_KEY_NAME)
    answer = RegisteredUserResponse(
        user=user_response(user), api_key=key, grant=verified.grant.amount
    )
    session.commit()
    return answer
