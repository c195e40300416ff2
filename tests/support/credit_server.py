"""A real credit_service on a loopback port, for the services that call it over HTTP.

``running_credit_service`` serves the real app (its own fresh database) under uvicorn in a
thread; :class:`CreditServer` is the admin's view of it the tests use to set money up and
check it afterwards, over real HTTP as well.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from credit_service.app import create_app
from credit_service.settings import CreditSettings
from tests.support.credentials import service_auth
from tests.support.http_server import serve_in_thread
from tests.support.postgres import PostgresTestServer

INTERNAL_TOKEN = "test-internal-token-5c1e"
AUTH_HEADERS = {"Authorization": f"Bearer {INTERNAL_TOKEN}"}
_START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class CreditServer:
    """A running credit_service and admin calls to arrange and inspect its money."""

    url: str

    def _call(
        self, method: str, path: str, json: dict[str, Any] | None = None, *, role: str = "admin"
    ) -> Any:
        headers = {**AUTH_HEADERS, "X-Gridweave-Role": role}
        response = httpx.request(method, f"{self.url}{path}", json=json, headers=headers)
        response.raise_for_status()
        return response.json()

    def fund(self, user_id: str, amount: int) -> None:
        """Mint ``amount`` micro-credits onto ``user_id``'s account (opened if missing)."""
        self._call(
            "POST",
            f"/v1/accounts/{user_id}/mint",
            {"amount": amount, "idempotency_key": f"test-fund:{user_id}:{amount}"},
        )

    def place_hold(self, user_id: str, amount: int, reference: str) -> int:
        """Place a hold carrying ``reference`` (a job id); return its id."""
        body = self._call(
            "POST",
            "/v1/holds",
            {
                "user_id": user_id,
                "amount": amount,
                "idempotency_key": f"test-hold:{reference}",
                "reference": reference,
            },
            role="metering",  # metering places every hold (for the platform)
        )
        return int(body["hold_id"])

    def account(self, user_id: str) -> dict[str, Any]:
        """The account body: balance, held, available."""
        body: dict[str, Any] = self._call("GET", f"/v1/accounts/{user_id}")
        return body

    def ledger_amounts(self, user_id: str) -> list[int]:
        """Every ledger entry's amount on the account, newest first."""
        page = self._call("GET", f"/v1/accounts/{user_id}/ledger?limit=1000")
        return [int(entry["amount"]) for entry in page["entries"]]

    def ledger_amounts_or_none(self, user_id: str) -> list[int] | None:
        """Like :meth:`ledger_amounts`, or None when the user has no account at all."""
        headers = {**AUTH_HEADERS, "X-Gridweave-Role": "admin"}
        response = httpx.get(f"{self.url}/v1/accounts/{user_id}", headers=headers)
        if response.status_code == 404:
            return None
        return self.ledger_amounts(user_id)

    def cap_spending(
        self, user_id: str, *, monthly_cap: int | None = None, per_job_cap: int | None = None
    ) -> dict[str, Any]:
        """Set an admin's spending caps on ``user_id`` (micro-credits; None: no cap)."""
        body: dict[str, Any] = self._call(
            "PUT",
            f"/v1/accounts/{user_id}/admin-spending-limits",
            {"monthly_cap": monthly_cap, "per_job_cap": per_job_cap},
        )
        return body

    def hold(self, hold_id: int) -> dict[str, Any]:
        """The hold body."""
        body: dict[str, Any] = self._call("GET", f"/v1/holds/{hold_id}")
        return body


@contextmanager
def running_credit_service(postgres: PostgresTestServer, state_dir: Path) -> Iterator[CreditServer]:
    """The real credit_service on a fresh database, served on a loopback port."""
    database_url = postgres.create_database("gwcredit")
    app = create_app(
        CreditSettings(
            database_url=database_url, **service_auth(INTERNAL_TOKEN), state_dir=state_dir
        )
    )
    try:
        with serve_in_thread(app, app.state.settings) as url:
            yield CreditServer(url)
    finally:
        app.state.database.dispose()
        postgres.drop_database(database_url)


@pytest.fixture(scope="module")
def credit(
    postgres: PostgresTestServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CreditServer]:
    """A real credit_service shared by one test module (a pytest plugin fixture)."""
    with running_credit_service(postgres, tmp_path_factory.mktemp("credit")) as server:
        yield server
