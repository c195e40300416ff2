"""Refills: only below the threshold, at most once per period, never twice for one request."""

from __future__ import annotations

from pathlib import Path

import httpx
import psycopg
from sqlalchemy.engine import make_url

from tests.faucet_service.factories import (
    GRANT,
    REFILL,
    THRESHOLD,
    faucet_settings,
    latest_code,
    new_address,
    new_email,
    onboard,
    running_faucet,
    sign_up,
    unique,
    verify,
)
from tests.support.credit_server import CreditServer
from tests.support.http_server import free_port


def _refill(faucet: httpx.Client, user_id: str) -> httpx.Response:
    return faucet.post("/v1/refills", json={"user_id": user_id}, headers=new_address())


def _age_refills(database_url: str, user_id: str) -> None:
    """Move the user's refills two days back, as if the period had passed."""
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo, autocommit=True) as connection:
        connection.execute(
            "UPDATE refills SET created_at = created_at - interval '2 days' WHERE user_id = %s",
            (user_id,),
        )


class TestRefill:
    def test_a_low_balance_is_refilled(self, faucet: httpx.Client, credit: CreditServer) -> None:
        _, user_id = onboard(faucet)

        response = _refill(faucet, user_id)

        assert response.status_code == 201
        assert response.json()["amount"] == REFILL
        assert response.json()["state"] == "minted"
        assert response.json()["balance"] == GRANT + REFILL
        assert credit.ledger_amounts(user_id) == [REFILL, GRANT]

    def test_a_second_refill_inside_the_period_is_refused(
        self, faucet: httpx.Client, credit: CreditServer
    ) -> None:
        _, user_id = onboard(faucet)
        _refill(faucet, user_id)

        second = _refill(faucet, user_id)

        assert second.status_code == 429
        assert second.json()["error"]["code"] == "refill_too_soon"
        assert "next_refill_at" in second.json()["error"]
        assert credit.ledger_amounts(user_id) == [REFILL, GRANT]

    def test_after_the_period_the_threshold_decides(
        self, faucet: httpx.Client, faucet_database: str, credit: CreditServer
    ) -> None:
        _, user_id = onboard(faucet)
        _refill(faucet, user_id)
        _age_refills(faucet_database, user_id)

        response = _refill(faucet, user_id)

        assert response.status_code == 409
        assert response.json()["error"] == {
            "code": "balance_above_threshold",
            "message": "refills are only given below the threshold",
            "balance": GRANT + REFILL,
            "threshold": THRESHOLD,
        }

    def test_a_user_who_never_verified_gets_nothing(self, faucet: httpx.Client) -> None:
        response = _refill(faucet, unique("stranger"))

        assert response.status_code == 403
        assert response.json()["error"]["code"] == "not_onboarded"

    def test_a_refill_interrupted_by_credit_is_finished_by_the_next_request(
        self,
        faucet: httpx.Client,
        faucet_database: str,
        credit: CreditServer,
        tmp_path: Path,
    ) -> None:
        _, user_id = onboard(faucet)
        # reading the balance works, the mint does not: point only the mint at a dead port
        settings = faucet_settings(faucet_database, credit.url, state_dir=tmp_path)
        dead = f"http://127.0.0.1:{free_port()}"
        with running_faucet(settings, credit_transport=_MintUnreachable(dead)) as cut_off:
            first = _refill(cut_off, user_id)

        finished = _refill(faucet, user_id)
        third = _refill(faucet, user_id)

        assert first.status_code == 503
        assert finished.status_code == 200
        assert finished.json()["state"] == "minted"
        assert third.status_code == 429
        assert credit.ledger_amounts(user_id) == [REFILL, GRANT]


class _MintUnreachable(httpx.HTTPTransport):
    """Real HTTP, except that mint calls are sent to ``dead_url``, where nothing listens."""

    def __init__(self, dead_url: str) -> None:
        super().__init__()
        self.dead_url = httpx.URL(dead_url)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/mint"):
            request.url = request.url.copy_with(port=self.dead_url.port)
        return super().handle_request(request)


def test_an_unminted_grant_is_minted_before_a_refill(
    faucet: httpx.Client, faucet_database: str, credit: CreditServer, tmp_path: Path
) -> None:
    email, user_id = new_email(), unique("user")
    sign_up(faucet, email, user_id)
    code = latest_code(faucet, email)
    dead = f"http://127.0.0.1:{free_port()}"
    with running_faucet(faucet_settings(faucet_database, dead, state_dir=tmp_path)) as cut_off:
        assert verify(cut_off, email, user_id, code).status_code == 503

    response = _refill(faucet, user_id)

    assert response.status_code == 201
    assert credit.ledger_amounts(user_id) == [REFILL, GRANT]
