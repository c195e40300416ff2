"""Sign-up and verification bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from credit_service.schemas.common import RequestBody, UserId
from faucet_service.schemas.common import Email

__all__ = ["GrantResponse", "SignUpRequest", "SignUpResponse", "VerifyRequest", "VerifyResponse"]

Code = Annotated[str, Field(pattern=r"^[0-9]{6}$", description="The six-digit code sent.")]


class SignUpRequest(RequestBody):
    """Send a verification code to ``email`` for the platform user ``user_id``."""

    email: Email
    user_id: UserId


class SignUpResponse(BaseModel):
    """Where the code went (``smtp`` or ``outbox``) and when it expires; never the code."""

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
    """The onboarding grant of an email (micro-credits)."""

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
