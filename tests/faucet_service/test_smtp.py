"""With an SMTP server configured, the code is emailed (to a real SMTP server here)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.faucet_service.factories import (
    ADMIN_HEADERS,
    GRANT,
    faucet_settings,
    new_email,
    running_faucet,
    sign_up,
    unique,
    verify,
)
from tests.support.credit_server import CreditServer
from tests.support.http_server import free_port
from tests.support.smtp_server import running_smtp_server


class TestSmtpDelivery:
    def test_the_code_is_emailed_and_verifies(
        self, faucet_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        email, user_id = new_email(), unique("user")
        with running_smtp_server() as inbox:
            settings = faucet_settings(
                faucet_database,
                credit.url,
                state_dir=tmp_path,
                smtp_host=inbox.host,
                smtp_port=inbox.port,
                smtp_starttls=False,
                smtp_from="Gridweave <faucet@gridweave.test>",
            )
            with running_faucet(settings) as faucet:
                signed_up = sign_up(faucet, email, user_id)
                [message] = inbox.received()
                match = re.search(r"code is (\d{6})", message.get_content())
                assert match is not None
                verified = verify(faucet, email, user_id, match.group(1))
                outbox = faucet.get(
                    "/v1/outbox", params={"recipient": email}, headers=ADMIN_HEADERS
                )

        assert signed_up.json()["delivery"] == "smtp"
        assert (message["To"], message["From"]) == (email, "Gridweave <faucet@gridweave.test>")
        assert verified.json()["grant"]["amount"] == GRANT
        assert outbox.json()["messages"] == []
        assert credit.ledger_amounts(user_id) == [GRANT]

    def test_an_unreachable_smtp_server_is_a_502(
        self, faucet_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        settings = faucet_settings(
            faucet_database,
            credit.url,
            state_dir=tmp_path,
            smtp_host="127.0.0.1",
            smtp_port=free_port(),
            smtp_starttls=False,
        )
        with running_faucet(settings) as faucet:
            response = sign_up(faucet, new_email(), unique("user"))

        assert response.status_code == 502
        assert response.json()["error"]["code"] == "email_delivery_failed"
