"""``/v1/sessions``: the dashboard's sign-in (public), a registered user's sign-in code by
email (public), and sign-out.

Signing in answers a session cookie (HttpOnly, SameSite=Strict, Secure when the request came
over HTTPS) and a CSRF cookie the page reads and echoes in ``X-CSRF-Token`` on writes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from fastapi import APIRouter, Request, Response

from gridweave_clients.platform.sessions import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    SessionResponse,
    SignInCodeRequest,
    SignInCodeResponse,
    SignInRequest,
)
from platform_service.routers.common import (
    ClientAddressDep,
    FaucetDep,
    HmacKeyDep,
    SessionDep,
    SettingsDep,
    UserDep,
)
from platform_service.services import sessions

__all__ = ["router"]

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
#: Public: no API key (the OpenAPI document's default security is the key).
PUBLIC: dict[str, Any] = {"security": []}


def _over_https(request: Request) -> bool:
    # the dashboard's proxy says how the browser reached it; a Secure cookie sent over plain
    # HTTP would be dropped by the browser, so only HTTPS gets one
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return request.url.scheme == "https" or forwarded == "https"


def _set_cookies(
    response: Response, *, token: str, csrf: str, expires: datetime, secure: bool
) -> None:
    common: dict[str, Any] = {
        "path": "/",
        "samesite": "strict",
        "secure": secure,
        "expires": expires,
    }
    response.set_cookie(SESSION_COOKIE, token, httponly=True, **common)
    response.set_cookie(CSRF_COOKIE, csrf, httponly=False, **common)


@router.post("", status_code=201, openapi_extra=PUBLIC)
def sign_in(
    body: SignInRequest,
    request: Request,
    response: Response,
    session: SessionDep,
    settings: SettingsDep,
    hmac_key: HmacKeyDep,
    faucet: FaucetDep,
    address: ClientAddressDep,
) -> SessionResponse:
    """Sign in with an API key, or with a sign-up's email code (the first key is then in the
    answer, shown once): the session cookie and the CSRF token follow."""
    signed_in = sessions.sign_in(
        session,
        faucet=faucet,
        hmac_key=hmac_key,
        request=body,
        lifetime=timedelta(hours=settings.session_hours),
        client_address=address,
    )
    _set_cookies(
        response,
        token=signed_in.token,
        csrf=signed_in.answer.csrf_token,
        expires=signed_in.answer.expires_at,
        secure=_over_https(request),
    )
    return signed_in.answer


@router.post("/codes", status_code=202, openapi_extra=PUBLIC)
def send_sign_in_code(
    body: SignInCodeRequest, session: SessionDep, faucet: FaucetDep, address: ClientAddressDep
) -> SignInCodeResponse:
    """Email a six-digit sign-in code to a registered user (public; limited per address and
    per email as sign-ups are; 404 for an email no user signed up with)."""
    return sessions.send_sign_in_code(
        session, faucet=faucet, email=body.email, client_address=address
    )


@router.delete("/current", status_code=204)
def sign_out(
    request: Request, _user: UserDep, session: SessionDep, hmac_key: HmacKeyDep
) -> Response:
    """End the session of the cookie sent (if any) and clear the cookies."""
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        sessions.end_session(session, hmac_key=hmac_key, token=token)
    response = Response(status_code=204)
    for name in (SESSION_COOKIE, CSRF_COOKIE):
        response.delete_cookie(name, path="/", samesite="strict", secure=_over_https(request))
    return response
