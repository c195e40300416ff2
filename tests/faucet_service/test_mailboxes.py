"""One grant per mailbox, keys nobody else can claim, one limit per client address."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from faucet_service.mailboxes import mailbox_of
from faucet_service.routers.common import canonical_address
from tests.faucet_service.factories import (
    GRANT,
    faucet_settings,
    latest_code,
    new_address,
    onboard,
    running_faucet,
    sign_up,
    unique,
    verify,
)
from tests.support.credit_server import AUTH_HEADERS, CreditServer

pytestmark = pytest.mark.postgres


def _local() -> str:
    return f"x-alias-{uuid.uuid4().hex[:8]}"


class TestMailboxRule:
    @pytest.mark.parametrize(
        ("email", "mailbox"),
        [
            ("ann@x.com", "ann@x.com"),
            ("ann+1@x.com", "ann@x.com"),
            ("ann+a+b@x.com", "ann@x.com"),
            ("a.n.n@x.com", "a.n.n@x.com"),  # dots matter where the provider is not known
            ("a.n.n+tag@gmail.com", "ann@gmail.com"),
            ("a.nn@googlemail.com", "ann@gmail.com"),
            ("+only@x.com", "+only@x.com"),
        ],
    )
    def test_the_canonical_mailbox(self, email: str, mailbox: str) -> None:
        assert mailbox_of(email) == mailbox


class TestOneGrantPerMailbox:
    def test_sub_addresses_share_the_mailbox_and_its_grant(
        self, faucet: httpx.Client, credit: CreditServer
    ) -> None:
        local = _local()
        first_user = unique("user")
        assert sign_up(faucet, f"{local}@x.com", first_user).status_code == 202
        code = latest_code(faucet, f"{local}@x.com")
        assert verify(faucet, f"{local}@x.com", first_user, code).status_code == 200

        others = [
            sign_up(faucet, f"{local}+{tag}@x.com", unique("user")) for tag in ("1", "2", "z")
        ]

        assert [response.status_code for response in others] == [409, 409, 409]
        assert {response.json()["error"]["code"] for response in others} == {"already_onboarded"}
        assert credit.ledger_amounts(first_user) == [GRANT]

    def test_gmail_ignores_dots_and_googlemail_is_gmail(
        self, faucet: httpx.Client, credit: CreditServer
    ) -> None:
        local = uuid.uuid4().hex[:10]
        dotted = f"{local[:3]}.{local[3:]}@gmail.com"
        email, user_id = onboard_as(faucet, dotted)

        again = sign_up(faucet, f"{local}+x@googlemail.com", unique("user"))

        assert again.status_code == 409
        assert credit.ledger_amounts(user_id) == [GRANT]
        assert email == dotted

    def test_the_code_goes_to_the_address_as_given_and_any_alias_verifies_it(
        self, faucet: httpx.Client, credit: CreditServer
    ) -> None:
        local, user_id = _local(), unique("user")
        typed = f"{local}+signup@x.com"
        signed_up = sign_up(faucet, typed, user_id)
        code = latest_code(faucet, typed)  # the outbox's recipient is the address as typed

        verified = verify(faucet, f"{local}@x.com", user_id, code)

        assert signed_up.json()["email"] == typed
        assert verified.status_code == 200
        assert verified.json()["grant"]["email"] == f"{local}@x.com"
        assert credit.ledger_amounts(user_id) == [GRANT]

    def test_sign_ups_per_email_count_per_mailbox(
        self, faucet_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        settings = faucet_settings(
            faucet_database, credit.url, state_dir=tmp_path, signups_per_email=2
        )
        local, user_id = _local(), unique("user")
        with running_faucet(settings) as strict:
            statuses = [
                sign_up(strict, f"{local}+{tag}@x.com", user_id).status_code
                for tag in ("1", "2", "3")
            ]
        assert statuses == [202, 202, 429]


def onboard_as(faucet: httpx.Client, email: str) -> tuple[str, str]:
    """Sign ``email`` up for a fresh user and verify it."""
    user_id = unique("user")
    assert sign_up(faucet, email, user_id).status_code == 202
    assert verify(faucet, email, user_id, latest_code(faucet, email)).status_code == 200
    return email, user_id


class TestOnboardingKey:
    def test_another_service_cannot_spend_the_grants_key_first(
        self, faucet: httpx.Client, credit: CreditServer
    ) -> None:
        email, victim = f"{_local()}@x.com", unique("victim")
        attacker = unique("mallory")
        credit.fund(attacker, 10)
        assert sign_up(faucet, email, victim).status_code == 202
        # the key the grant used to be minted under, derived from the email alone
        guessed = f"faucet:onboarding:{hashlib.sha256(email.encode()).hexdigest()}"
        stolen = httpx.post(
            f"{credit.url}/v1/accounts/{attacker}/deduct",
            json={"amount": 1, "idempotency_key": guessed},
            headers={**AUTH_HEADERS, "X-Gridweave-Role": "metering"},
        )

        verified = verify(faucet, email, victim, latest_code(faucet, email))

        assert stolen.status_code == 200
        assert verified.status_code == 200  # before: 502 for ever, the grant left pending
        assert verified.json()["grant"]["state"] == "minted"
        assert credit.ledger_amounts(victim) == [GRANT]

    def test_the_key_is_not_computable_from_the_email(
        self, faucet: httpx.Client, faucet_database: str
    ) -> None:
        email, user_id = onboard(faucet)
        conninfo = make_url(faucet_database).set(drivername="postgresql")
        with psycopg.connect(conninfo.render_as_string(False)) as connection:
            row = connection.execute(
                "SELECT idempotency_key FROM grants WHERE user_id = %s", (user_id,)
            ).fetchone()
        assert row is not None
        key = str(row[0])
        assert key.startswith("faucet:onboarding:")
        assert hashlib.sha256(email.encode()).hexdigest() not in key


class TestClientAddresses:
    @pytest.mark.parametrize(
        ("given", "canonical"),
        [
            ("::ffff:203.0.113.7", "203.0.113.7"),
            ("203.0.113.7", "203.0.113.7"),
            (" 2001:db8::1 ", "2001:db8::1"),
            ("2001:DB8:0::1", "2001:db8::1"),
        ],
    )
    def test_one_spelling_per_address(self, given: str, canonical: str) -> None:
        assert canonical_address(given) == canonical

    def test_an_ipv4_mapped_address_shares_the_ipv4_limit(
        self, faucet_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        settings = faucet_settings(
            faucet_database, credit.url, state_dir=tmp_path, requests_per_address=2
        )
        octet = uuid.uuid4().int % 250 + 1
        plain, mapped = f"203.0.113.{octet}", f"::ffff:203.0.113.{octet}"
        with running_faucet(settings) as strict:
            statuses = [
                strict.post(
                    "/v1/signups",
                    json={"email": f"{_local()}@x.com", "user_id": unique("user")},
                    headers={"X-Gridweave-Client-Address": address},
                ).status_code
                for address in (plain, mapped, mapped)
            ]
            other = strict.post(
                "/v1/signups",
                json={"email": f"{_local()}@x.com", "user_id": unique("user")},
                headers=new_address(),
            )
        assert statuses == [202, 202, 429]
        assert other.status_code == 202
