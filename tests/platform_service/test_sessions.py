"""The dashboard's sign-in over real HTTP: the session cookie, its CSRF token, sign-out;
the email-code way through the real faucet (codes read from its outbox)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.faucet_service.factories import latest_code
from tests.platform_service.factories import (
    PlatformServer,
    User,
    bearer,
)

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def platform(faucet_platform: PlatformServer) -> PlatformServer:
    """The platform calling the faucet and credit_service."""
    return faucet_platform


@pytest.fixture
def browser(platform: PlatformServer) -> Iterator[httpx.Client]:
    """A client with its own cookie jar, as a browser tab has."""
    with httpx.Client(base_url=platform.url, timeout=30) as client:
        yield client


def _sign_in(browser: httpx.Client, user: User, **headers: str) -> httpx.Response:
    response = browser.post("/v1/sessions", json={"api_key": user.key}, headers=headers)
    assert response.status_code == 201, response.text
    return response


def _set_cookies(response: httpx.Response) -> dict[str, str]:
    """Each Set-Cookie header by cookie name, lower-cased."""
    return {
        header.split("=", 1)[0]: header.lower()
        for header in response.headers.get_list("set-cookie")
    }


class TestSignIn:
    def test_an_api_key_gets_an_http_only_strict_cookie_and_a_csrf_token(
        self, platform: PlatformServer, browser: httpx.Client
    ) -> None:
        user = platform.new_user()
        response = _sign_in(browser, user)
        body = response.json()
        assert body["user"]["user_id"] == user.user_id and body["api_key"] is None
        cookies = _set_cookies(response)
        assert "httponly" in cookies["gw_session"] and "samesite=strict" in cookies["gw_session"]
        assert "secure" not in cookies["gw_session"]  # plain HTTP: a Secure cookie would drop
        assert "httponly" not in cookies["gw_csrf"]  # the page reads it
        assert browser.cookies["gw_csrf"] == body["csrf_token"]
        assert browser.get("/v1/me").json()["user_id"] == user.user_id

    def test_over_https_the_cookies_are_secure(
        self, platform: PlatformServer, browser: httpx.Client
    ) -> None:
        response = _sign_in(browser, platform.new_user(), **{"X-Forwarded-Proto": "https"})
        assert all("; secure" in header for header in _set_cookies(response).values())

    def test_a_wrong_key_is_401_and_sets_no_cookie(
        self, platform: PlatformServer, browser: httpx.Client
    ) -> None:
        response = browser.post("/v1/sessions", json={"api_key": "gw_live_nope"})
        assert response.status_code == 401
        assert "set-cookie" not in response.headers
        assert browser.get("/v1/me").status_code == 401

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({}, "email"),
            ({"email": "a@example.com"}, "code"),
            ({"api_key": "gw_live_x", "email": "a@example.com"}, "api_key"),
            ({"api_key": "gw_live_x", "token": "x"}, "token"),
        ],
    )
    def test_bad_bodies_name_the_field(
        self, browser: httpx.Client, body: dict[str, str], field: str
    ) -> None:
        response = browser.post("/v1/sessions", json=body)
        assert response.status_code == 422, response.text
        assert field in str(response.json()["error"]["fields"])


class TestCsrf:
    def test_a_write_with_the_cookie_needs_the_csrf_header(
        self, platform: PlatformServer, browser: httpx.Client
    ) -> None:
        token = _sign_in(browser, platform.new_user()).json()["csrf_token"]
        bare = browser.post("/v1/keys", json={"name": "from the page"})
        assert bare.status_code == 403 and bare.json()["error"]["code"] == "csrf_rejected"
        for wrong in ("", "x" * 43, token[:-1]):
            refused = browser.post(
                "/v1/keys", json={"name": "forged"}, headers={"X-CSRF-Token": wrong}
            )
            assert refused.status_code == 403, wrong
        made = browser.post("/v1/keys", json={"name": "page"}, headers={"X-CSRF-Token": token})
        assert made.status_code == 201, made.text
        names = [key["name"] for key in browser.get("/v1/keys").json()["keys"]]
        assert names.count("page") == 1 and "forged" not in names

    def test_another_sessions_csrf_token_does_not_pass(
        self, platform: PlatformServer, browser: httpx.Client
    ) -> None:
        _sign_in(browser, platform.new_user())
        with httpx.Client(base_url=platform.url) as other:
            foreign = _sign_in(other, platform.new_user()).json()["csrf_token"]
        refused = browser.post("/v1/keys", json={"name": "x"}, headers={"X-CSRF-Token": foreign})
        assert refused.status_code == 403

    def test_an_api_key_needs_no_csrf_token(self, platform: PlatformServer) -> None:
        user = platform.new_user()
        made = platform.http.post("/v1/keys", json={"name": "cli"}, headers=user.headers)
        assert made.status_code == 201


class TestSignOut:
    def test_sign_out_ends_the_session_and_clears_the_cookies(
        self, platform: PlatformServer, browser: httpx.Client
    ) -> None:
        token = _sign_in(browser, platform.new_user()).json()["csrf_token"]
        stolen = browser.cookies["gw_session"]
        assert browser.delete("/v1/sessions/current").status_code == 403  # a write: CSRF
        out = browser.delete("/v1/sessions/current", headers={"X-CSRF-Token": token})
        assert out.status_code == 204
        assert "gw_session" not in browser.cookies
        assert browser.get("/v1/me").status_code == 401
        replayed = httpx.get(f"{platform.url}/v1/me", cookies={"gw_session": stolen})
        assert replayed.status_code == 401  # ended on the server, not only in the browser

    def test_revoking_the_key_ends_its_sessions(
        self, platform: PlatformServer, browser: httpx.Client
    ) -> None:
        user = platform.new_user()
        _sign_in(browser, user)
        key_id = user.key.split("_")[2]
        revoked = platform.http.delete(f"/v1/keys/{key_id}", headers=user.headers)
        assert revoked.status_code == 200
        assert browser.get("/v1/me").status_code == 401

    def test_a_made_up_cookie_is_401(self, platform: PlatformServer) -> None:
        response = httpx.get(f"{platform.url}/v1/me", cookies={"gw_session": "A" * 43})
        assert response.status_code == 401


class TestPurge:
    def test_a_sign_in_deletes_the_expired_and_ended_sessions(
        self, platform: PlatformServer, platform_database: str
    ) -> None:
        user = platform.new_user()
        engine = create_engine(platform_database)
        mine = {"user": user.user_id}
        count = text("SELECT count(*) FROM web_sessions WHERE user_id = :user")
        live = text(
            "SELECT count(*) FROM web_sessions WHERE user_id = :user AND expires_at > now()"
        )
        try:
            with httpx.Client(base_url=platform.url, timeout=30) as ended_tab:
                token = _sign_in(ended_tab, user).json()["csrf_token"]
                ended_tab.delete("/v1/sessions/current", headers={"X-CSRF-Token": token})
            with engine.connect() as connection:
                assert connection.execute(count, mine).scalar_one() == 1  # ended, still a row
            with httpx.Client(base_url=platform.url, timeout=30) as expired_tab:
                _sign_in(expired_tab, user)  # the ended one goes
                with engine.begin() as connection:
                    assert connection.execute(count, mine).scalar_one() == 1
                    connection.execute(
                        text(
                            "UPDATE web_sessions SET expires_at = now() - interval '1 second'"
                            " WHERE user_id = :user"
                        ),
                        mine,
                    )
                assert expired_tab.get("/v1/me").status_code == 401
            with httpx.Client(base_url=platform.url, timeout=30) as live_tab:
                _sign_in(live_tab, user)  # the expired one goes
                assert live_tab.get("/v1/me").status_code == 200
            with engine.connect() as connection:
                assert connection.execute(count, mine).scalar_one() == 1
                assert connection.execute(live, mine).scalar_one() == 1
        finally:
            engine.dispose()


class TestLastUsed:
    def test_a_key_shows_when_it_was_last_used(self, platform: PlatformServer) -> None:
        user = platform.new_user()
        fresh = platform.http.post("/v1/keys", json={"name": "unused"}, headers=user.headers)
        listed = {
            key["name"]: key
            for key in platform.http.get("/v1/keys", headers=user.headers).json()["keys"]
        }
        assert listed["unused"]["last_used_at"] is None
        assert listed["default"]["last_used_at"] is not None
        assert fresh.json()["last_used_at"] is None


class TestEmailCode:
    def test_a_sign_up_code_signs_the_new_user_in(
        self, platform: PlatformServer, faucet: httpx.Client, browser: httpx.Client
    ) -> None:
        email = f"person-{uuid.uuid4().hex[:8]}@example.com"
        assert browser.post("/v1/signups", json={"email": email}).status_code == 202
        code = latest_code(faucet, email)
        response = browser.post("/v1/sessions", json={"email": email, "code": code})
        assert response.status_code == 201, response.text
        body = response.json()
        assert body["user"]["email"] == email and body["user"]["verified_at"] is not None
        key = body["api_key"]["api_key"]
        assert browser.get("/v1/me").json()["email"] == email
        assert platform.http.get("/v1/me", headers=bearer(key)).json()["email"] == email
        again = browser.post("/v1/sessions", json={"email": email, "code": code})
        # a sign-up code signs up once; a registered user's email code is a sign-in code
        assert again.status_code == 404, again.text
        assert again.json()["error"]["code"] == "sign_in_code_not_found"


def _registered(browser: httpx.Client, faucet: httpx.Client) -> tuple[str, str]:
    """A user signed up through the faucet (then signed out): (email, first API key)."""
    email = f"person-{uuid.uuid4().hex[:8]}@example.com"
    assert browser.post("/v1/signups", json={"email": email}).status_code == 202
    answer = browser.post("/v1/sessions", json={"email": email, "code": latest_code(faucet, email)})
    assert answer.status_code == 201, answer.text
    browser.cookies.clear()
    return email, answer.json()["api_key"]["api_key"]


class TestSignInCode:
    """A registered user signs in with a code emailed on request (no key in the answer)."""

    def test_a_registered_user_asks_a_code_and_signs_in(
        self, platform: PlatformServer, faucet: httpx.Client, browser: httpx.Client
    ) -> None:
        email, _ = _registered(browser, faucet)
        asked = browser.post("/v1/sessions/codes", json={"email": email})
        assert asked.status_code == 202, asked.text
        assert (asked.json()["email"], asked.json()["delivery"]) == (email, "outbox")
        assert "code" not in asked.json()
        code = latest_code(faucet, email)
        response = browser.post("/v1/sessions", json={"email": email, "code": code})
        assert response.status_code == 201, response.text
        assert response.json()["api_key"] is None  # no new key: the user has theirs
        assert "gw_session" in _set_cookies(response)
        assert browser.get("/v1/me").json()["email"] == email
        csrf = response.json()["csrf_token"]
        # a write with the session and its CSRF token passes (no key behind the session)
        created = browser.post(
            "/v1/keys", json={"name": "from the dashboard"}, headers={"X-CSRF-Token": csrf}
        )
        assert created.status_code == 201, created.text
        spent = httpx.post(
            f"{platform.url}/v1/sessions", json={"email": email, "code": code}, timeout=30
        )
        assert spent.status_code == 410, spent.text
        assert spent.json()["error"]["code"] == "code_used"

    def test_revoking_a_key_leaves_an_email_session_alone(
        self, platform: PlatformServer, faucet: httpx.Client, browser: httpx.Client
    ) -> None:
        email, key = _registered(browser, faucet)
        browser.post("/v1/sessions/codes", json={"email": email})
        signed_in = browser.post(
            "/v1/sessions", json={"email": email, "code": latest_code(faucet, email)}
        )
        assert signed_in.status_code == 201, signed_in.text
        key_id = key.split("_")[2]
        revoked = platform.http.delete(f"/v1/keys/{key_id}", headers=bearer(key))
        assert revoked.is_success, revoked.text
        assert browser.get("/v1/me").status_code == 200
        ended = browser.delete(
            "/v1/sessions/current", headers={"X-CSRF-Token": signed_in.json()["csrf_token"]}
        )
        assert ended.status_code == 204
        assert browser.get("/v1/me").status_code == 401

    def test_a_wrong_code_says_how_many_tries_are_left(
        self, faucet: httpx.Client, browser: httpx.Client
    ) -> None:
        email, _ = _registered(browser, faucet)
        browser.post("/v1/sessions/codes", json={"email": email})
        code = latest_code(faucet, email)
        wrong = f"{(int(code) + 1) % 1_000_000:06d}"
        response = browser.post("/v1/sessions", json={"email": email, "code": wrong})
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "wrong_code"
        assert response.json()["error"]["attempts_left"] == 4
        assert "gw_session" not in _set_cookies(response)

    def test_an_email_without_a_registered_user_gets_no_code(
        self, faucet: httpx.Client, browser: httpx.Client
    ) -> None:
        unknown = f"nobody-{uuid.uuid4().hex[:8]}@example.com"
        pending = f"pending-{uuid.uuid4().hex[:8]}@example.com"
        assert browser.post("/v1/signups", json={"email": pending}).status_code == 202
        for email in (unknown, pending):
            response = browser.post("/v1/sessions/codes", json={"email": email})
            assert response.status_code == 404, response.text
            assert response.json()["error"]["resource"] == "user"

    @pytest.mark.parametrize("body", [{}, {"email": "not-an-email"}, {"email": 3}])
    def test_bad_bodies_name_the_field(
        self, browser: httpx.Client, body: dict[str, object]
    ) -> None:
        response = browser.post("/v1/sessions/codes", json=body)
        assert response.status_code == 422, response.text
        assert "email" in response.text
