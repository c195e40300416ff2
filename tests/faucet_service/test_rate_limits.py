"""Rate limits per email and per client address, kept in PostgreSQL across restarts."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.faucet_service.factories import (
    faucet_settings,
    new_address,
    new_email,
    running_faucet,
    unique,
)
from tests.support.credit_server import CreditServer


def _sign_up(
    faucet: httpx.Client, email: str, address: dict[str, str], user_id: str | None = None
) -> httpx.Response:
    return faucet.post(
        "/v1/signups", json={"email": email, "user_id": user_id or unique("user")}, headers=address
    )


class TestRateLimits:
    def test_sign_ups_per_email(
        self, strict_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        settings = faucet_settings(
            strict_database, credit.url, state_dir=tmp_path, signups_per_email=2
        )
        email, user_id = new_email(), unique("user")
        with running_faucet(settings) as faucet:
            statuses = [
                _sign_up(faucet, email, new_address(), user_id).status_code for _ in range(3)
            ]
            refused = _sign_up(faucet, email, new_address(), user_id)
            other_email = _sign_up(faucet, new_email(), new_address())

        assert statuses == [202, 202, 429]
        assert refused.json()["error"] == {
            "code": "rate_limited",
            "message": "too many requests: try again later",
            "scope": "signup_email",
            "limit": 2,
            "window_seconds": 3600,
        }
        assert other_email.status_code == 202

    def test_requests_per_address_hold_across_a_restart(
        self, strict_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        settings = faucet_settings(
            strict_database, credit.url, state_dir=tmp_path, requests_per_address=3
        )
        address = new_address()
        with running_faucet(settings) as faucet:
            sign_ups = [_sign_up(faucet, new_email(), address).status_code for _ in range(2)]
            verify = faucet.post(
                "/v1/signups/verify",
                json={"email": new_email(), "user_id": unique("user"), "code": "000000"},
                headers=address,
            )
            limited = _sign_up(faucet, new_email(), address)
        with running_faucet(settings) as restarted:
            still_limited = restarted.post(
                "/v1/refills", json={"user_id": unique("user")}, headers=address
            )
            other_address = _sign_up(restarted, new_email(), new_address())

        assert (sign_ups, verify.status_code) == ([202, 202], 404)
        assert limited.status_code == 429
        assert limited.json()["error"]["scope"] == "address"
        assert still_limited.status_code == 429
        assert other_address.status_code == 202
