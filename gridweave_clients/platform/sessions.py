"""The dashboard's sign-in: wire models of ``/v1/sessions``.

A browser signs in with an API key, or with an email code: the code of its sign-up (the new
user's first key is then in the answer, shown once), or, for a user who signed up before, a
sign-in code asked at ``POST /v1/sessions/codes``; the platform answers with a session cookie
(HttpOnly) and a CSRF token that every write made with the cookie carries in a header.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from gridweave_clients.faucet.models import Code, Email
from gridweave_clients.fields import RequestBody
from gridweave_clients.platform.models import NewApiKeyResponse, UserResponse

__all__ = [
    "CSRF_COOKIE",
    "CSRF_HEADER",
    "SESSION_COOKIE",
    "SessionResponse",
    "SignInCodeRequest",
    "SignInCodeResponse",
    "SignInRequest",
]

#: The session's cookie (HttpOnly, SameSite=Strict, Path=/).
SESSION_COOKIE = "gw_session"
#: The CSRF token's cookie, readable by the page, echoed in :data:`CSRF_HEADER` on writes.
CSRF_COOKIE = "gw_csrf"
CSRF_HEADER = "X-CSRF-Token"


class SignInCodeRequest(RequestBody):
    """Email a sign-in code to the registered user of ``email``."""

    email: Email


class SignInCodeResponse(BaseModel):
    """Where the sign-in code went (``smtp``, or the operator's ``outbox``), until when."""

    email: str
    expires_at: datetime
    delivery: Literal["smtp", "outbox"]


class SignInRequest(RequestBody):
    """Either ``api_key``, or ``email`` and the ``code`` emailed to it (at sign-up, or asked
    at ``/v1/sessions/codes`` by a registered user)."""

    api_key: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    email: Email | None = None
    code: Code | None = None


class SessionResponse(BaseModel):
    """The signed-in user, the session's CSRF token and end; a new user's first key."""

    user: UserResponse
    csrf_token: str
    expires_at: datetime
    api_key: NewApiKeyResponse | None = None
