"""The faucet client (gridweave_clients.faucet) against the real faucet_service."""

from __future__ import annotations

import re

import httpx
import pytest

from gridweave_clients import Forbidden, InvalidRequest, RateLimited
from gridweave_clients.faucet import FaucetClient
from tests.faucet_service.factories import GRANT, REFILL, new_address, new_email, unique
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer


def _address() -> str:
    return new_address()["X-Gridweave-Client-Address"]


def test_sign_up_verify_and_refill_through_the_client(
    faucet: httpx.Client, credit: CreditServer
) -> None:
    email, user_id = new_email(), unique("user")
    url = str(faucet.base_url)
    with (
        FaucetClient(url, INTERNAL_TOKEN, role="platform") as client,
        FaucetClient(url, INTERNAL_TOKEN, role="admin") as operator,
    ):
        sent = client.sign_up(email.upper(), user_id, client_address=_address())
        [message] = operator.list_outbox(recipient=email, limit=1).messages
        match = re.search(r"code is (\d{6})", message.body)
        assert match is not None
        verified = client.verify(email, user_id, match.group(1), client_address=_address())
        refill = client.request_refill(user_id, client_address=_address())
        with pytest.raises(RateLimited) as too_soon:
            client.request_refill(user_id, client_address=_address())
        with pytest.raises(Forbidden):
            client.list_outbox()

    assert (sent.email, sent.delivery) == (email, "outbox")
    assert (verified.grant.amount, verified.grant.state, verified.replayed) == (
        GRANT,
        "minted",
        False,
    )
    assert (refill.state, refill.balance) == ("minted", GRANT + REFILL)
    assert too_soon.value.code == "refill_too_soon"
    assert credit.ledger_amounts(user_id) == [REFILL, GRANT]


def test_a_bad_address_or_code_is_refused_before_sending() -> None:
    client = FaucetClient("http://127.0.0.1:9", INTERNAL_TOKEN)

    with pytest.raises(InvalidRequest) as address:
        client.sign_up(new_email(), "u-1", client_address="not-an-ip")
    with pytest.raises(InvalidRequest) as code:
        client.verify(new_email(), "u-1", "12ab56")

    assert address.value.field == "client_address"
    assert code.value.field == "code"
