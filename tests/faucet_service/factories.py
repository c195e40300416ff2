"""Factories and helpers of the faucet_service tests: defaults in one place."""

from __future__ import annotations

import re
import uuid
from contextlib import AbstractContextManager
from typing import Any

import httpx

from faucet_service.app import create_app
from faucet_service.settings import FaucetSettings
from tests.support.credentials import service_auth
from tests.support.credit_server import AUTH_HEADERS, INTERNAL_TOKEN
from tests.support.http_server import running_service

ADMIN_HEADERS = {**AUTH_HEADERS, "X-Gridweave-Role": "admin"}
GRANT = 500_000
REFILL = 2_000_000
THRESHOLD = 1_000_000


def unique(prefix: str) -> str:
    """A fresh id, so tests sharing a module's databases never collide."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def new_email() -> str:
    """A fresh email address."""
    return f"{unique('user')}@example.com"


def new_address() -> dict[str, str]:
    """Headers carrying a fresh client address, so address limits of tests never mix."""
    octets = uuid.uuid4().bytes
    return {"X-Gridweave-Client-Address": f"10.{octets[0]}.{octets[1]}.{octets[2] % 254 + 1}"}


def faucet_settings(database_url: str, credit_url: str, **overrides: Any) -> FaucetSettings:
    """Settings for a faucet_service on ``database_url`` calling ``credit_url``."""
    values: dict[str, Any] = {
        "database_url": database_url,
        **service_auth(INTERNAL_TOKEN),
        "credit_service_url": credit_url,
        "credit_attempts": 2,
        "onboarding_grant": GRANT,
        "refill_amount": REFILL,
        "refill_threshold": THRESHOLD,
        "requests_per_address": 1000,
        "signups_per_email": 1000,
        **overrides,
    }
    return FaucetSettings(**values)


def running_faucet(
    settings: FaucetSettings, **app_options: Any
) -> AbstractContextManager[httpx.Client]:
    """faucet_service served on a loopback port; a client carrying the token."""
    return running_service(create_app(settings, **app_options), AUTH_HEADERS)


def latest_code(faucet: httpx.Client, email: str) -> str:
    """The code in the newest outbox message to ``email`` (read as the operator would)."""
    response = faucet.get("/v1/outbox", params={"recipient": email}, headers=ADMIN_HEADERS)
    response.raise_for_status()
    body = response.json()["messages"][0]["body"]
    match = re.search(r"code is (\d{6})", body)
    assert match is not None, body
    return match.group(1)


def wrong_code(code: str) -> str:
    """A well-formed code that is not ``code``."""
    return f"{(int(code) + 1) % 1_000_000:06d}"


def sign_up(faucet: httpx.Client, email: str, user_id: str) -> httpx.Response:
    """Ask for a code, from a fresh client address."""
    return faucet.post(
        "/v1/signups", json={"email": email, "user_id": user_id}, headers=new_address()
    )


def verify(faucet: httpx.Client, email: str, user_id: str, code: str) -> httpx.Response:
    """Submit a code for ``user_id``, from a fresh client address."""
    return faucet.post(
        "/v1/signups/verify",
        json={"email": email, "user_id": user_id, "code": code},
        headers=new_address(),
    )


def onboard(faucet: httpx.Client) -> tuple[str, str]:
    """A user whose email is verified and grant minted: (email, user_id)."""
    email, user_id = new_email(), unique("user")
    assert sign_up(faucet, email, user_id).status_code == 202
    assert verify(faucet, email, user_id, latest_code(faucet, email)).status_code == 200
    return email, user_id
