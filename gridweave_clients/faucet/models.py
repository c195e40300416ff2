"""faucet_service's wire models: the bodies it validates and answers, shared with clients."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

from gridweave_clients.fields import RequestBody, UserId

__all__ = [
    "CLIENT_ADDRESS_HEADER",
    "Code",
    "Email",
    "GrantResponse",
    "OutboxMessageResponse",
    "OutboxPageResponse",
    "RefillRequest",
    "RefillResponse",
    "SignInCodeRequest",
    "SignInCodeResponse",
    "SignInVerifiedResponse",
    "SignUpRequest",
    "SignUpResponse",
    "VerifyRequest",
    "VerifyResponse",
    "VerifySignInRequest",
    "normalize_email",
]

#: The end user's IP address, set by platform_service (trusted with its service token):
#: the faucet's per-address rate limits count by it.
CLIENT_ADDRESS_HEADER = "X-Gridweave-Client-Address"

_EMAIL_PATTERN = (
    r"^[a-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}"
    r"@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$"
)


def normalize_email(value: Any) -> Any:
    """Trim and lower-case an email (the faucet then counts it per mailbox: ``+tag``, dots)."""
    return value.strip().lower() if isinstance(value, str) else value


Email = Annotated[
    str,
    BeforeValidator(normalize_email),
    Field(max_length=254, pattern=_EMAIL_PATTERN, description="An email address."),
]
Code = Annotated[str, Field(pattern=r"^[0-9]{6}$", description="The six-digit code sent.")]

# -- sign-ups ---------------------------------------------------------------------------------


class SignUpRequest(RequestBody):
    """Send a verification code to ``email`` for the platform user ``user_id``."""

    email: Email
    user_id: UserId


class SignUpResponse(BaseModel):
    """Where the code goes (queued for ``smtp``, or kept in the ``outbox``); never the code."""

    email: str
    user_id: str
    expires_at: datetime
    delivery: Literal["smtp", "outbox"]


class VerifyRequest(RequestBody):
    """Prove the mailbox with the code; the onboarding grant follows.

    ``user_id`` must be the user the code was issued to (at sign-up).
    """

    email: Email
    user_id: UserId
    code: Code


class GrantResponse(BaseModel):
    """The onboarding grant of a mailbox (micro-credits); ``email`` is the mailbox counted."""

    email: str
    user_id: str
    amount: int
    state: str
    minted_at: datetime | None


class VerifyResponse(BaseModel):
    """The verified email and its grant; ``replayed`` when it was verified before."""

    email: str
    user_id: str
    verified_at: datetime
    replayed: bool
    grant: GrantResponse


# -- sign-in codes of existing users --------------------------------------------------------


class SignInCodeRequest(RequestBody):
    """Send a sign-in code to ``email``, the email of the existing platform user ``user_id``."""

    email: Email
    user_id: UserId


class SignInCodeResponse(BaseModel):
    """Where the sign-in code goes (queued for ``smtp``, or kept in the ``outbox``)."""

    email: str
    user_id: str
    expires_at: datetime
    delivery: Literal["smtp", "outbox"]


class VerifySignInRequest(RequestBody):
    """Check a sign-in code; it signs ``user_id`` in once."""

    email: Email
    user_id: UserId
    code: Code


class SignInVerifiedResponse(BaseModel):
    """The code was right: ``user_id`` proved ``email``; the code is spent."""

    email: str
    user_id: str
    used_at: datetime


# -- refills ----------------------------------------------------------------------------------


class RefillRequest(RequestBody):
    """Ask for a refill of ``user_id``'s account."""

    user_id: UserId


class RefillResponse(BaseModel):
    """A refill (micro-credits) and the balance credit_service reported after it."""

    refill_id: int
    user_id: str
    amount: int
    state: str
    created_at: datetime
    minted_at: datetime | None
    balance: int | None


# -- outbox -----------------------------------------------------------------------------------


class OutboxMessageResponse(BaseModel):
    """A verification email: ``kept`` (no SMTP server), ``queued``, ``sent`` or ``failed``.

    The body of a sent or failed message is blanked: the code is not kept once it is out.
    """

    id: int
    recipient: str
    subject: str
    body: str
    state: Literal["kept", "queued", "sent", "failed"]
    attempts: int
    sent_at: datetime | None
    last_error: str | None
    created_at: datetime


class OutboxPageResponse(BaseModel):
    """Outbox messages, newest first."""

    messages: list[OutboxMessageResponse]
