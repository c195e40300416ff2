"""With an SMTP server set, the code is queued and sent off the request path (real servers)."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.faucet_service.factories import (
    ADMIN_HEADERS,
    GRANT,
    faucet_settings,
    new_address,
    new_email,
    running_faucet,
    sign_up,
    unique,
    verify,
)
from tests.support.credit_server import CreditServer
from tests.support.http_server import free_port
from tests.support.smtp_server import SmtpInbox, running_silent_smtp_server, running_smtp_server

_WAIT_S = 20.0


def _smtp_settings(database: str, credit: CreditServer, tmp_path: Path, **overrides: Any) -> Any:
    return faucet_settings(
        database,
        credit.url,
        state_dir=tmp_path,
        smtp_starttls=False,
        smtp_from="Gridweave <faucet@gridweave.test>",
        **overrides,
    )


def _wait_for_messages(inbox: SmtpInbox, count: int) -> None:
    deadline = time.monotonic() + _WAIT_S
    while len(inbox.received()) < count and time.monotonic() < deadline:
        time.sleep(0.02)


def _outbox(faucet: httpx.Client, email: str) -> list[dict[str, Any]]:
    response = faucet.get("/v1/outbox", params={"recipient": email}, headers=ADMIN_HEADERS)
    response.raise_for_status()
    messages: list[dict[str, Any]] = response.json()["messages"]
    return messages


def _wait_for_state(faucet: httpx.Client, email: str, state: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + _WAIT_S
    while True:
        messages = _outbox(faucet, email)
        if (messages and messages[0]["state"] == state) or time.monotonic() > deadline:
            return messages
        time.sleep(0.05)


class TestSmtpDelivery:
    def test_the_code_is_emailed_and_verifies(
        self, faucet_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        email, user_id = new_email(), unique("user")
        with running_smtp_server() as inbox:
            settings = _smtp_settings(
                faucet_database, credit, tmp_path, smtp_host=inbox.host, smtp_port=inbox.port
            )
            with running_faucet(settings) as faucet:
                signed_up = sign_up(faucet, email, user_id)
                _wait_for_messages(inbox, 1)
                [message] = inbox.received()
                match = re.search(r"code is (\d{6})", message.get_content())
                assert match is not None
                verified = verify(faucet, email, user_id, match.group(1))
                [kept] = _wait_for_state(faucet, email, "sent")

        assert signed_up.status_code == 202
        assert signed_up.json()["delivery"] == "smtp"
        assert (message["To"], message["From"]) == (email, "Gridweave <faucet@gridweave.test>")
        assert verified.json()["grant"]["amount"] == GRANT
        # sent, and the code is no longer kept in the database
        assert (kept["state"], kept["attempts"], kept["last_error"]) == ("sent", 1, None)
        assert kept["sent_at"] is not None
        assert match.group(1) not in kept["body"]
        assert credit.ledger_amounts(user_id) == [GRANT]

    def test_an_unreachable_smtp_server_is_retried_then_given_up(
        self, faucet_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        settings = _smtp_settings(
            faucet_database,
            credit,
            tmp_path,
            smtp_host="127.0.0.1",
            smtp_port=free_port(),
            smtp_max_attempts=2,
            smtp_retry_seconds=0.1,
            smtp_poll_seconds=0.1,
        )
        email = new_email()
        with running_faucet(settings) as faucet:
            response = sign_up(faucet, email, unique("user"))
            [message] = _wait_for_state(faucet, email, "failed")

        # the sign-up is answered; the delivery failure is the outbox's to report
        assert response.status_code == 202
        assert (message["state"], message["attempts"]) == ("failed", 2)
        assert message["last_error"] == "ConnectionRefusedError"
        assert "code is" not in message["body"]


class TestHangingSmtpServer:
    def test_sign_ups_and_health_never_wait_on_mail(
        self, faucet_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        with running_silent_smtp_server() as silent:
            settings = _smtp_settings(
                faucet_database,
                credit,
                tmp_path,
                smtp_host=silent.host,
                smtp_port=silent.port,
                smtp_timeout_seconds=3.0,
            )
            with running_faucet(settings) as faucet:
                # 16 at once, twice the worker threads: before, each held a thread for the
                # SMTP timeout, and the faucet (its health check too) waited behind them.
                # A client that gives up after 2 s would have seen none answered.
                quick = httpx.Client(
                    base_url=str(faucet.base_url), headers=faucet.headers, timeout=2.0
                )
                emails = [new_email() for _ in range(16)]

                def one_sign_up(email: str) -> int:
                    body = {"email": email, "user_id": unique("user")}
                    return quick.post("/v1/signups", json=body, headers=new_address()).status_code

                with quick, ThreadPoolExecutor(max_workers=16) as pool:
                    statuses = list(pool.map(one_sign_up, emails))
                    deadline = time.monotonic() + _WAIT_S
                    while silent.accepted() == 0 and time.monotonic() < deadline:
                        time.sleep(0.02)
                    health = quick.get("/healthz")
                    outbox = quick.get("/v1/outbox", headers=ADMIN_HEADERS)

        assert statuses == [202] * 16
        assert silent.accepted() >= 1  # the sender was stuck talking to the server meanwhile
        assert health.status_code == 200
        assert outbox.status_code == 200
        queued = {message["recipient"] for message in outbox.json()["messages"]}
        assert set(emails) <= queued
