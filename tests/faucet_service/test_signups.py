"""Sign-up and verification: codes hashed, few tries, expiry, one grant per email."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
from sqlalchemy.engine import make_url

from tests.faucet_service.factories import (
    ADMIN_HEADERS,
    GRANT,
    faucet_settings,
    latest_code,
    new_address,
    new_email,
    onboard,
    running_faucet,
    sign_up,
    unique,
    verify,
    wrong_code,
)
from tests.support.credit_server import AUTH_HEADERS, CreditServer
from tests.support.http_server import free_port


def _sql(database_url: str, statement: str, *params: object) -> list[tuple[object, ...]]:
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo, autocommit=True) as connection:
        cursor = connection.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


class TestSignUp:
    def test_the_code_goes_to_the_outbox_and_is_stored_only_hashed(
        self, faucet: httpx.Client, faucet_database: str
    ) -> None:
        email, user_id = new_email(), unique("user")

        response = sign_up(faucet, email, user_id)

        assert response.status_code == 202
        assert response.json()["delivery"] == "outbox"
        assert "code" not in response.json()
        code = latest_code(faucet, email)
        [(code_hash, failed)] = _sql(
            faucet_database,
            "SELECT code_hash, failed_attempts FROM verifications WHERE email = %s",
            email,
        )
        assert isinstance(code_hash, str) and len(code_hash) == 64
        assert code not in code_hash
        assert failed == 0

    def test_emails_are_normalized(self, faucet: httpx.Client) -> None:
        email, user_id = new_email(), unique("user")

        response = sign_up(faucet, f"  {email.upper()} ", user_id)

        assert response.json()["email"] == email
        assert verify(faucet, email, user_id, latest_code(faucet, email)).status_code == 200

    def test_the_outbox_is_for_admins_only(self, faucet: httpx.Client) -> None:
        as_platform = faucet.get("/v1/outbox", headers={"X-Gridweave-Role": "platform"})
        without_token = httpx.get(faucet.base_url.join("/v1/outbox"))

        assert as_platform.status_code == 403
        assert without_token.status_code == 401

    def test_an_onboarded_email_gets_no_second_code(self, faucet: httpx.Client) -> None:
        email, _ = onboard(faucet)

        response = sign_up(faucet, email, unique("another-user"))

        assert response.status_code == 409
        assert response.json()["error"] == {
            "code": "already_onboarded",
            "message": "the onboarding grant was already given",
            "field": "email",
        }

    def test_an_onboarded_user_gets_no_second_code_for_another_email(
        self, faucet: httpx.Client
    ) -> None:
        _, user_id = onboard(faucet)

        response = sign_up(faucet, new_email(), user_id)

        assert response.status_code == 409
        assert response.json()["error"]["field"] == "user_id"


class TestSignUpForAnotherUsersEmail:
    def test_a_live_code_of_another_user_is_not_replaced(
        self, faucet: httpx.Client, credit: CreditServer
    ) -> None:
        email, owner_id, attacker_id = new_email(), unique("owner"), unique("attacker")
        sign_up(faucet, email, owner_id)

        taken = sign_up(faucet, email, attacker_id)
        verified = verify(faucet, email, owner_id, latest_code(faucet, email))

        assert taken.status_code == 409
        assert taken.json()["error"] == {
            "code": "signup_pending",
            "message": "this email has a live verification code for another user: try again later",
            "field": "email",
        }
        assert verified.status_code == 200
        assert verified.json()["grant"]["user_id"] == owner_id
        assert credit.ledger_amounts(owner_id) == [GRANT]
        assert credit.ledger_amounts_or_none(attacker_id) is None

    def test_the_same_user_may_ask_for_a_new_code(self, faucet: httpx.Client) -> None:
        email, user_id = new_email(), unique("user")
        sign_up(faucet, email, user_id)

        again = sign_up(faucet, email, user_id)

        assert again.status_code == 202
        assert verify(faucet, email, user_id, latest_code(faucet, email)).status_code == 200

    def test_an_expired_code_of_another_user_is_replaced(
        self, faucet: httpx.Client, faucet_database: str, credit: CreditServer
    ) -> None:
        email, first_id, second_id = new_email(), unique("user"), unique("user")
        sign_up(faucet, email, first_id)
        _sql(
            faucet_database,
            "UPDATE verifications SET expires_at = now() - interval '1 second' WHERE email = %s",
            email,
        )

        replaced = sign_up(faucet, email, second_id)
        verified = verify(faucet, email, second_id, latest_code(faucet, email))

        assert replaced.status_code == 202
        assert verified.json()["grant"]["user_id"] == second_id
        assert credit.ledger_amounts(second_id) == [GRANT]

    def test_a_locked_code_of_another_user_is_replaced(self, faucet: httpx.Client) -> None:
        email, first_id, second_id = new_email(), unique("user"), unique("user")
        sign_up(faucet, email, first_id)
        code = latest_code(faucet, email)
        for _ in range(5):
            verify(faucet, email, first_id, wrong_code(code))

        assert sign_up(faucet, email, second_id).status_code == 202

    def test_concurrent_sign_ups_of_other_users_leave_one_code(self, faucet: httpx.Client) -> None:
        email = new_email()
        user_ids = [unique("user") for _ in range(8)]
        url = faucet.base_url.join("/v1/signups")

        def post(user_id: str) -> httpx.Response:
            body = {"email": email, "user_id": user_id}
            return httpx.post(url, json=body, headers={**AUTH_HEADERS, **new_address()})

        with ThreadPoolExecutor(max_workers=8) as pool:
            responses = list(pool.map(post, user_ids))

        statuses = sorted(response.status_code for response in responses)
        assert statuses == [202] + [409] * 7
        [winner] = [r.json()["user_id"] for r in responses if r.status_code == 202]
        code = latest_code(faucet, email)
        assert verify(faucet, email, winner, code).status_code == 200


class TestVerify:
    def test_a_code_verifies_only_for_the_user_it_was_issued_to(
        self, faucet: httpx.Client, faucet_database: str, credit: CreditServer
    ) -> None:
        email, owner_id, attacker_id = new_email(), unique("owner"), unique("attacker")
        sign_up(faucet, email, owner_id)
        code = latest_code(faucet, email)

        stolen = verify(faucet, email, attacker_id, code)
        [(failed,)] = _sql(
            faucet_database, "SELECT failed_attempts FROM verifications WHERE email = %s", email
        )
        owner = verify(faucet, email, owner_id, code)
        stolen_replay = verify(faucet, email, attacker_id, code)

        assert stolen.status_code == 403
        assert stolen.json()["error"] == {
            "code": "code_not_for_user",
            "message": "this email's code was issued to another user",
            "field": "user_id",
        }
        assert failed == 0
        assert owner.status_code == 200
        assert stolen_replay.status_code == 403
        assert credit.ledger_amounts(owner_id) == [GRANT]
        assert credit.ledger_amounts_or_none(attacker_id) is None

    def test_the_right_code_mints_the_grant_once(
        self, faucet: httpx.Client, credit: CreditServer
    ) -> None:
        email, user_id = new_email(), unique("user")
        sign_up(faucet, email, user_id)
        code = latest_code(faucet, email)

        first = verify(faucet, email, user_id, code)
        again = verify(faucet, email, user_id, code)

        assert first.status_code == 200
        assert first.json()["grant"]["state"] == "minted"
        assert first.json()["grant"]["amount"] == GRANT
        assert (first.json()["replayed"], again.json()["replayed"]) == (False, True)
        assert again.json()["grant"] == first.json()["grant"]
        assert credit.ledger_amounts(user_id) == [GRANT]

    def test_six_wrong_codes_lock_the_code_even_when_the_sixth_is_right(
        self, faucet: httpx.Client, credit: CreditServer
    ) -> None:
        email, user_id = new_email(), unique("user")
        sign_up(faucet, email, user_id)
        code = latest_code(faucet, email)

        wrong = [verify(faucet, email, user_id, wrong_code(code)) for _ in range(5)]
        sixth = verify(faucet, email, user_id, code)

        assert [r.status_code for r in wrong] == [400] * 5
        assert [r.json()["error"]["attempts_left"] for r in wrong] == [4, 3, 2, 1, 0]
        assert sixth.status_code == 403
        assert sixth.json()["error"]["code"] == "code_locked"
        assert credit.ledger_amounts_or_none(user_id) is None

    def test_a_new_sign_up_replaces_a_locked_code(
        self, faucet: httpx.Client, credit: CreditServer
    ) -> None:
        email, user_id = new_email(), unique("user")
        sign_up(faucet, email, user_id)
        old_code = latest_code(faucet, email)
        for _ in range(5):
            verify(faucet, email, user_id, wrong_code(old_code))

        sign_up(faucet, email, user_id)
        response = verify(faucet, email, user_id, latest_code(faucet, email))

        assert response.status_code == 200
        assert credit.ledger_amounts(user_id) == [GRANT]

    def test_an_expired_code_is_refused(
        self, faucet: httpx.Client, faucet_database: str, credit: CreditServer
    ) -> None:
        email, user_id = new_email(), unique("user")
        sign_up(faucet, email, user_id)
        _sql(
            faucet_database,
            "UPDATE verifications SET expires_at = now() - interval '1 second' WHERE email = %s",
            email,
        )

        response = verify(faucet, email, user_id, latest_code(faucet, email))

        assert response.status_code == 410
        assert response.json()["error"]["code"] == "code_expired"
        assert credit.ledger_amounts_or_none(user_id) is None

    def test_a_code_without_a_sign_up_is_404(self, faucet: httpx.Client) -> None:
        response = verify(faucet, new_email(), unique("user"), "123456")

        assert response.status_code == 404
        assert response.json()["error"]["code"] == "signup_not_found"

    def test_concurrent_verifications_mint_once(
        self, faucet: httpx.Client, credit: CreditServer
    ) -> None:
        email, user_id = new_email(), unique("user")
        sign_up(faucet, email, user_id)
        code = latest_code(faucet, email)
        url = faucet.base_url.join("/v1/signups/verify")

        def post(_: int) -> httpx.Response:
            body = {"email": email, "user_id": user_id, "code": code}
            return httpx.post(url, json=body, headers=AUTH_HEADERS)

        with ThreadPoolExecutor(max_workers=10) as pool:
            responses = list(pool.map(post, range(10)))

        assert {response.status_code for response in responses} == {200}
        assert sorted(response.json()["replayed"] for response in responses) == [False] + [True] * 9
        assert credit.ledger_amounts(user_id) == [GRANT]

    def test_credit_unreachable_keeps_the_grant_for_a_replay(
        self,
        faucet: httpx.Client,
        faucet_database: str,
        credit: CreditServer,
        tmp_path: Path,
    ) -> None:
        email, user_id = new_email(), unique("user")
        sign_up(faucet, email, user_id)
        code = latest_code(faucet, email)
        unreachable = f"http://127.0.0.1:{free_port()}"
        with running_faucet(
            faucet_settings(faucet_database, unreachable, state_dir=tmp_path)
        ) as cut_off:
            first = verify(cut_off, email, user_id, code)

        replay = verify(faucet, email, user_id, code)

        assert first.status_code == 503
        assert first.json()["error"]["code"] == "credit_unavailable"
        assert replay.status_code == 200
        assert replay.json()["grant"]["state"] == "minted"
        assert credit.ledger_amounts(user_id) == [GRANT]


def test_admin_headers_read_the_outbox(faucet: httpx.Client) -> None:
    email = new_email()
    sign_up(faucet, email, unique("user"))

    messages = faucet.get("/v1/outbox", params={"recipient": email}, headers=ADMIN_HEADERS).json()[
        "messages"
    ]

    assert [message["recipient"] for message in messages] == [email]
    assert messages[0]["subject"] == "Your Gridweave verification code"
