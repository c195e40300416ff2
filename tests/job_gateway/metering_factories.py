"""metering_service and credit_service as the gateway's usage tests see them.

The ``metering`` fixture (tests/job_gateway/conftest.py) runs metering_service on a real
PostgreSQL, settling with a real credit_service over HTTP; records are counted through
metering's API, charges through credit_service's ledger.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from gridweave_controller import CrdClient, Job
from metering_service.settings import MeteringSettings
from tests.support.credit_server import CreditServer
from tests.support.waiting import wait_until

FUNDS = 10_000_000


@dataclass(frozen=True)
class Metering:
    """The running metering_service, its settings (to serve it again) and credit_service."""

    http: httpx.Client
    settings: MeteringSettings
    credit: CreditServer
    database: str

    @property
    def url(self) -> str:
        return str(self.http.base_url).rstrip("/")

    def records(self, user_id: str) -> list[dict[str, Any]]:
        """Every usage record of ``user_id`` (checked against the period's own count)."""
        response = self.http.get("/v1/usage", params={"user_id": user_id, "limit": 1000})
        response.raise_for_status()
        page = response.json()
        assert page["totals"]["records"] == len(page["records"])
        return list(page["records"])

    def gpu_model(self, job_id: str) -> str | None:
        """The GPU model metering's database holds for the job (not in the API's answer)."""
        engine = create_engine(self.database)
        try:
            with engine.connect() as connection:
                query = text("SELECT gpu_model FROM usage_records WHERE subject_id = :job")
                return connection.execute(query, {"job": job_id}).scalar_one()  # type: ignore[no-any-return]
        finally:
            engine.dispose()


def funded_user(metering: Metering) -> str:
    """A user of the test's own with credits."""
    user_id = f"u-{uuid.uuid4().hex[:10]}"
    metering.credit.fund(user_id, FUNDS)
    return user_id


def usage_mark(job: Job) -> str | None:
    """The usage record id the job is marked with, if any."""
    condition = job.status.condition("UsageReported")
    if condition is None:
        return None
    assert (condition.status, condition.reason) == ("True", "Reported")
    return condition.message


def wait_reported(crd: CrdClient, job_id: str) -> str:
    """Wait for the job's usage mark; the record id."""
    wait_until(lambda: usage_mark(crd.get_job(job_id)) is not None, what=f"{job_id} reported")
    marked = usage_mark(crd.get_job(job_id))
    assert marked is not None
    return marked


def assert_billed_once(metering: Metering, user_id: str, job_id: str, record_id: str) -> None:
    """One record for the job, the one marked, settled, and one charge on the ledger."""
    records = metering.records(user_id)
    assert [(r["job_id"], str(r["id"])) for r in records] == [(job_id, record_id)]
    settlement = records[0]["settlement"]
    assert settlement["state"] == "settled"
    assert metering.credit.ledger_amounts(user_id) == [-settlement["charged"], FUNDS]
