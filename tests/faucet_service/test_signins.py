"""Sign-in codes of existing users: sent like sign-up codes, checked once, few tries."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.faucet_service.factories import (
    faucet_settings,
    latest_code,
    new_address,
    new_email,
    onboard,
    running_faucet,
    unique,
    verify,
    wrong_code,
)
from tests.support.credit_server import CreditServer


def send_code(
    faucet: httpx.Client, email: str, user_id: str, address: dict[str, str] | None = None
) -> httpx.Response:
    return faucet.post(
        "/v1/signins", json={"email": email, "user_id": user_id}, headers=address or new_address()
    )


def check_code(faucet: httpx.Client, email: str, user_id: str, code: str) -> httpx.Response:
    return faucet.post(
        "/v1/signins/verify",
        json={"email": email, "user_id": user_id, "code": code},
        headers=new_address(),
    )


class TestSignInCodes:
    def test_an_onboarded_user_gets_a_code_that_signs_in_once(self, faucet: httpx.Client) -> None:
        email, user_id = onboard(faucet)

        sent = send_code(faucet, email, user_id)
        code = latest_code(faucet, email)
        first = check_code(faucet, email, user_id, code)
        again = check_code(faucet, email, user_id, code)

        assert sent.status_code == 202, sent.text
        assert (sent.json()["email"], sent.json()["delivery"]) == (email, "outbox")
        assert "code" not in sent.json()
        assert first.status_code == 200, first.text
        assert first.json()["user_id"] == user_id
        assert again.status_code == 410
        assert again.json()["error"]["code"] == "code_used"

    def test_the_email_says_sign_in(self, faucet: httpx.Client) -> None:
        email, user_id = onboard(faucet)
        send_code(faucet, email, user_id)
        listed = faucet.get(
            "/v1/outbox", params={"recipient": email}, headers={"X-Gridweave-Role": "admin"}
        ).json()["messages"]
        assert listed[0]["subject"] == "Your Gridweave sign-in code"

    def test_a_sign_up_code_never_signs_in(self, faucet: httpx.Client) -> None:
        email, user_id = new_email(), unique("user")
        faucet.post("/v1/signups", json={"email": email, "user_id": user_id}, headers=new_address())
        sign_up_code = latest_code(faucet, email)
        send_code(faucet, email, user_id)
        sign_in_code = latest_code(faucet, email)
        if sign_up_code != sign_in_code:  # one in a million they are the same six digits
            refused = check_code(faucet, email, user_id, sign_up_code)
            assert refused.status_code == 400
            assert refused.json()["error"]["code"] == "wrong_code"
        assert check_code(faucet, email, user_id, sign_in_code).status_code == 200
        # and the sign-up code still verifies the sign-up: the two never mix
        assert verify(faucet, email, user_id, sign_up_code).status_code == 200

    def test_wrong_codes_count_then_lock(self, faucet: httpx.Client) -> None:
        email, user_id = onboard(faucet)
        send_code(faucet, email, user_id)
        code = latest_code(faucet, email)

        tries = [check_code(faucet, email, user_id, wrong_code(code)) for _ in range(5)]
        locked = check_code(faucet, email, user_id, code)

        assert [t.status_code for t in tries] == [400] * 5
        assert [t.json()["error"]["attempts_left"] for t in tries] == [4, 3, 2, 1, 0]
        assert locked.status_code == 403
        assert locked.json()["error"]["code"] == "code_locked"
        # a new code unlocks
        send_code(faucet, email, user_id)
        assert check_code(faucet, email, user_id, latest_code(faucet, email)).status_code == 200

    def test_a_code_is_for_its_user_only_and_none_sent_is_404(self, faucet: httpx.Client) -> None:
        email, user_id = onboard(faucet)
        send_code(faucet, email, user_id)
        code = latest_code(faucet, email)

        foreign = check_code(faucet, email, unique("user"), code)
        taken = send_code(faucet, email, unique("user"))
        unsent = check_code(faucet, new_email(), user_id, "123456")

        assert foreign.status_code == 403
        assert foreign.json()["error"] == {
            "code": "code_not_for_user",
            "message": foreign.json()["error"]["message"],
            "field": "user_id",
        }
        assert taken.status_code == 409  # a live code of this user holds the mailbox
        assert unsent.status_code == 404
        assert unsent.json()["error"]["code"] == "sign_in_code_not_found"

    @pytest.mark.parametrize(
        "body",
        [
            {"email": "not-an-email", "user_id": "u-1"},
            {"email": "a@example.com"},
            {"email": "a@example.com", "user_id": "u-1", "code": "12345"},
        ],
    )
    def test_bad_input_is_422_naming_the_field(
        self, faucet: httpx.Client, body: dict[str, str]
    ) -> None:
        path = "/v1/signins/verify" if "code" in body else "/v1/signins"
        response = faucet.post(path, json=body, headers=new_address())
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "invalid_request"

    def test_without_the_internal_token_is_401(self, faucet: httpx.Client) -> None:
        response = httpx.post(
            faucet.base_url.join("/v1/signins"), json={"email": "a@example.com", "user_id": "u"}
        )
        assert response.status_code == 401


class TestSignInRateLimits:
    def test_codes_per_email_and_per_address_are_limited_as_sign_ups_are(
        self, strict_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        settings = faucet_settings(
            strict_database,
            credit.url,
            state_dir=tmp_path,
            signups_per_email=2,
            requests_per_address=3,
        )
        email, user_id = new_email(), unique("user")
        with running_faucet(settings) as faucet:
            per_email = [send_code(faucet, email, user_id).status_code for _ in range(3)]
            refused = send_code(faucet, email, user_id)
            address = new_address()
            per_address = [
                send_code(faucet, new_email(), unique("user"), address).status_code
                for _ in range(4)
            ]

        assert per_email == [202, 202, 429]
        assert refused.json()["error"]["scope"] == "signin_email"
        assert per_address == [202, 202, 202, 429]
