"""A settlement interrupted midway is finished by a replay, and charges exactly once."""

from __future__ import annotations

from pathlib import Path

import httpx
import psycopg
from sqlalchemy.engine import make_url

from tests.metering_service.factories import (
    metering_settings,
    running_metering,
    unique,
    usage_body,
)
from tests.support.credit_server import CreditServer
from tests.support.http_server import free_port


class AnswerLosingTransport(httpx.AsyncHTTPTransport):
    """Real HTTP to credit_service, but every answer is lost after the server acted on it
    (the client a first report settles with: ``services.first_report``)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        response = await super().handle_async_request(request)
        await response.aread()
        await response.aclose()
        raise httpx.ReadTimeout("the answer was lost on the way back", request=request)


def _funded_job(credit: CreditServer) -> tuple[str, str, int]:
    user_id, job_id = unique("user"), unique("job")
    credit.fund(user_id, 10_000_000)
    return user_id, job_id, credit.place_hold(user_id, 1_000_000, reference=job_id)


class TestInterruptedSettlement:
    def test_credit_unreachable_leaves_it_pending_and_a_replay_settles_it(
        self,
        metering: httpx.Client,
        metering_database: str,
        credit: CreditServer,
        tmp_path: Path,
    ) -> None:
        user_id, job_id, hold_id = _funded_job(credit)
        unreachable = f"http://127.0.0.1:{free_port()}"
        settings = metering_settings(metering_database, unreachable, state_dir=tmp_path)
        with running_metering(settings) as cut_off:
            first = cut_off.post("/v1/usage", json=usage_body(job_id, user_id))
        hold_status_before_replay = credit.hold(hold_id)["status"]
        receipts_before_replay = _receipts_queued(metering_database, first.json()["id"])

        replay = metering.post("/v1/usage", json=usage_body(job_id, user_id))

        assert first.status_code == 201
        assert first.json()["settlement"]["state"] == "pending"
        assert first.json()["settlement"]["error_code"] == "credit_unavailable"
        assert hold_status_before_replay == "open"
        assert receipts_before_replay == 0  # a receipt is queued for a settlement only
        assert replay.status_code == 200
        assert replay.json()["settlement"]["state"] == "settled"
        assert replay.json()["settlement"]["attempts"] == 2
        assert credit.ledger_amounts(user_id) == [-1700, 10_000_000]
        assert _receipts_queued(metering_database, first.json()["id"]) == 1

    def test_a_lost_answer_is_completed_by_a_replay_without_a_second_charge(
        self,
        metering: httpx.Client,
        metering_database: str,
        credit: CreditServer,
        tmp_path: Path,
    ) -> None:
        user_id, job_id, hold_id = _funded_job(credit)
        losing = AnswerLosingTransport()
        settings = metering_settings(metering_database, credit.url, state_dir=tmp_path)
        with running_metering(settings, async_credit_transport=losing) as lossy:
            first = lossy.post("/v1/usage", json=usage_body(job_id, user_id))

        # credit_service did settle (every retry after the first was a replay there) ...
        assert losing.calls == 2
        assert first.json()["settlement"]["state"] == "pending"
        assert credit.hold(hold_id)["status"] == "captured"
        # ... and the replay here learns it without moving money again
        replay = metering.post("/v1/usage", json=usage_body(job_id, user_id))
        assert replay.json()["settlement"]["state"] == "settled"
        assert replay.json()["settlement"]["charged"] == 1700
        assert credit.ledger_amounts(user_id) == [-1700, 10_000_000]

    def test_the_settle_route_retries_a_pending_record(
        self,
        metering: httpx.Client,
        metering_database: str,
        credit: CreditServer,
        tmp_path: Path,
    ) -> None:
        user_id, job_id, _ = _funded_job(credit)
        unreachable = f"http://127.0.0.1:{free_port()}"
        settings = metering_settings(metering_database, unreachable, state_dir=tmp_path)
        with running_metering(settings) as cut_off:
            usage_id = cut_off.post("/v1/usage", json=usage_body(job_id, user_id)).json()["id"]

        settled = metering.post(f"/v1/usage/{usage_id}/settle")
        again = metering.post(f"/v1/usage/{usage_id}/settle")

        assert settled.json()["settlement"]["state"] == "settled"
        assert again.json() == settled.json()
        assert credit.ledger_amounts(user_id) == [-1700, 10_000_000]

    def test_a_report_after_the_database_dropped_every_connection_is_settled_once(
        self, metering: httpx.Client, metering_database: str, credit: CreditServer
    ) -> None:
        # the first report settles on a kept connection; a restart of PostgreSQL drops it
        user_id, job_id, _ = _funded_job(credit)
        assert metering.post("/v1/usage", json=usage_body(job_id, user_id)).status_code == 201
        _drop_every_other_connection(metering_database)
        user_id, job_id, hold_id = _funded_job(credit)

        answer = metering.post("/v1/usage", json=usage_body(job_id, user_id))

        assert answer.status_code == 201, answer.text
        assert answer.json()["settlement"]["state"] == "settled"
        assert credit.hold(hold_id)["status"] == "captured"
        assert credit.ledger_amounts(user_id) == [-1700, 10_000_000]


def _receipts_queued(database_url: str, usage_id: int) -> int:
    """How many receipts of usage record ``usage_id`` are in the outbox."""
    url = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM receipt_outbox WHERE usage_id = %s", (usage_id,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def _drop_every_other_connection(database_url: str) -> None:
    """Terminate every session of the database but this one, as a server restart would."""
    url = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(url, autocommit=True) as connection:
        dropped = connection.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert dropped is not None and dropped[0] > 0
