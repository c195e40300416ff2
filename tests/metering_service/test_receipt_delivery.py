"""Every settlement's receipt reaches chain_service once: through outages, kills and replays."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from gridweave_clients.chain import verify_chain
from gridweave_clients.chain.models import ChainPageResponse
from tests.chain_service.factories import chain_settings, running_chain
from tests.metering_service.factories import metering_settings, running_metering, unique, usage_body
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer
from tests.support.http_server import free_port
from tests.support.postgres import PostgresTestServer

_DEADLINE_S = 60.0


@pytest.fixture
def databases(postgres: PostgresTestServer) -> Iterator[tuple[str, str]]:
    """Fresh metering and chain databases for one test."""
    metering_url, chain_url = postgres.create_database("gwmeter"), postgres.create_database("gwch")
    try:
        yield metering_url, chain_url
    finally:
        postgres.drop_database(metering_url)
        postgres.drop_database(chain_url)


def _settle(metering: httpx.Client, credit: CreditServer, count: int) -> list[str]:
    """Record and settle ``count`` jobs' usage; their hold references."""
    user_id = unique("user")
    credit.fund(user_id, 100_000_000)
    references = []
    for _ in range(count):
        job_id = unique("job")
        credit.place_hold(user_id, 1_000_000, reference=job_id)
        body = usage_body(job_id, user_id, gpu_model="NVIDIA L4", result_ref=f"s3://r/{job_id}")
        response = metering.post("/v1/usage", json=body)
        assert response.json()["settlement"]["state"] == "settled", response.text
        references.append(job_id)
    return references


def _chain(chain: httpx.Client) -> ChainPageResponse:
    return ChainPageResponse.model_validate_json(chain.get("/v1/chain").content)


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _outbox(metering_url: str) -> list[tuple[str, int | None, int]]:
    """(state, receipt seq, attempts) of every outbox row, by id."""
    engine = create_engine(metering_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text("SELECT state, receipt_seq, attempts FROM receipt_outbox ORDER BY id")
            )
            return [(row[0], row[1], row[2]) for row in rows]
    finally:
        engine.dispose()


def _assert_each_once(chain: httpx.Client, references: list[str]) -> None:
    receipts = _chain(chain).receipts
    assert sorted(r.hold_reference for r in receipts) == sorted(references)
    assert verify_chain(receipts).ok


def _fast_retries(**overrides: object) -> dict[str, object]:
    return {
        "receipt_poll_seconds": 0.05,
        "receipt_retry_seconds": 0.05,
        "receipt_max_retry_seconds": 0.2,
        "receipt_timeout_seconds": 2.0,
        **overrides,
    }


@contextmanager
def _delivering(
    databases: tuple[str, str], credit: CreditServer, tmp_path: Path, **overrides: object
) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """chain_service, and metering delivering to it (fast retries); (metering, chain)."""
    metering_url, chain_url = databases
    with running_chain(chain_settings(chain_url, tmp_path / "chain")) as chain:
        settings = metering_settings(
            metering_url,
            credit.url,
            state_dir=tmp_path,
            chain_service_url=str(chain.base_url),
            **_fast_retries(**overrides),
        )
        with running_metering(settings) as metering:
            yield metering, chain


def test_each_settlement_is_delivered_once_with_what_the_receipt_says(
    databases: tuple[str, str], credit: CreditServer, tmp_path: Path
) -> None:
    metering_url = databases[0]
    with _delivering(databases, credit, tmp_path) as (metering, chain):
        references = _settle(metering, credit, 4)
        _wait(lambda: len(_chain(chain).receipts) == 4, "4 receipts")
        replay = metering.post("/v1/usage", json=usage_body(references[0], "x"))
        assert replay.status_code == 409  # other figures: refused, nothing queued
        _wait(lambda: all(row[0] == "delivered" for row in _outbox(metering_url)), "delivery")

        _assert_each_once(chain, references)
        first = _chain(chain).receipts[0]
        assert first.gpu_model == "NVIDIA L4"
        assert first.wall_microseconds == 10_000_000 and first.charged == first.cost > 0
        assert first.result_ref_sha256 is not None
        assert [row[1] for row in _outbox(metering_url)] == [1, 2, 3, 4]


def test_receipts_wait_while_chain_service_is_down_and_arrive_once_it_is_up(
    databases: tuple[str, str], credit: CreditServer, tmp_path: Path
) -> None:
    metering_url, chain_url = databases
    chain_port = free_port()
    settings = metering_settings(
        metering_url,
        credit.url,
        state_dir=tmp_path,
        chain_service_url=f"http://127.0.0.1:{chain_port}",
        **_fast_retries(),
    )
    with running_metering(settings) as metering:
        references = _settle(metering, credit, 3)
        _wait(lambda: all(row[2] >= 2 for row in _outbox(metering_url)), "failed attempts")
        assert {row[0] for row in _outbox(metering_url)} == {"queued"}

        with running_chain(chain_settings(chain_url, tmp_path / "chain"), port=chain_port) as chain:
            _wait(lambda: all(row[0] == "delivered" for row in _outbox(metering_url)), "delivery")
            _assert_each_once(chain, references)


def test_a_receipt_delivered_again_is_not_written_twice(
    databases: tuple[str, str], credit: CreditServer, tmp_path: Path
) -> None:
    metering_url = databases[0]
    with _delivering(databases, credit, tmp_path) as (metering, chain):
        references = _settle(metering, credit, 2)
        _wait(lambda: all(row[0] == "delivered" for row in _outbox(metering_url)), "delivery")
        engine = create_engine(metering_url)
        try:
            with engine.begin() as connection:  # as if the first answer had been lost
                connection.execute(
                    text(
                        "UPDATE receipt_outbox SET state = 'queued', receipt_seq = NULL, "
                        "next_attempt_at = now()"
                    )
                )
        finally:
            engine.dispose()
        _wait(lambda: all(row[0] == "delivered" for row in _outbox(metering_url)), "again")

        _assert_each_once(chain, references)
        assert [row[1:] for row in _outbox(metering_url)] == [(1, 2), (2, 2)]


def _start_metering(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "metering_service"],
            env={**os.environ, **env},
            stdout=output,
            stderr=output,
        )


def test_a_deliverer_killed_mid_stream_loses_and_repeats_nothing(
    databases: tuple[str, str], credit: CreditServer, tmp_path: Path
) -> None:
    metering_url, chain_url = databases
    count = 60
    queued = metering_settings(metering_url, credit.url, state_dir=tmp_path)  # no chain yet
    with running_metering(queued) as metering:
        references = _settle(metering, credit, count)
    assert [row[0] for row in _outbox(metering_url)] == ["queued"] * count

    with running_chain(chain_settings(chain_url, tmp_path / "chain")) as chain:
        env = {
            "METERING_DATABASE_URL": metering_url,
            "METERING_HOST": "127.0.0.1",
            "METERING_PORT": str(free_port()),
            "CREDIT_SERVICE_URL": credit.url,
            "CHAIN_SERVICE_URL": str(chain.base_url),
            "GRIDWEAVE_INTERNAL_TOKEN": INTERNAL_TOKEN,
            "GRIDWEAVE_STATE_DIR": str(tmp_path),
            "METERING_RECEIPT_BATCH_SIZE": "2",  # 30 rounds at least: time to kill it
            "METERING_RECEIPT_TIMEOUT_SECONDS": "0.5",
            "METERING_RECEIPT_POLL_SECONDS": "0.05",
        }
        log = tmp_path / "metering.log"
        first = _start_metering(env, log)
        try:
            _wait(lambda: len(_chain(chain).receipts) >= 3, f"deliveries ({log.read_text()})")
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
            killed_at = len(_chain(chain).receipts)
        finally:
            if first.poll() is None:
                first.kill()
        assert killed_at < count, "the deliverer finished before it could be killed"

        second = _start_metering(env, log)
        try:
            _wait(
                lambda: all(row[0] == "delivered" for row in _outbox(metering_url)),
                f"the rest ({log.read_text()})",
            )
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(timeout=30)

        _assert_each_once(chain, references)
        seqs = [row[1] for row in _outbox(metering_url)]
        assert sorted(seqs) == list(range(1, count + 1))  # type: ignore[type-var]


def _delivery_calls(chain: httpx.Client) -> float:
    """The calls chain_service answered on its receipt routes (one or a batch each)."""
    calls = 0.0
    for line in chain.get("/metrics").text.splitlines():
        if line.startswith("gridweave_http_requests_total{") and 'route="/v1/receipts' in line:
            calls += float(line.rsplit(" ", 1)[1])
    return calls


def test_settlements_close_together_share_one_delivery_call(
    databases: tuple[str, str], credit: CreditServer, tmp_path: Path
) -> None:
    """A settlement wakes the deliverer, which lingers so the next ones go in its call."""
    overrides = {"receipt_poll_seconds": 30.0, "receipt_linger_seconds": 2.0}
    with _delivering(databases, credit, tmp_path, **overrides) as (metering, chain):
        started = time.monotonic()
        references = _settle(metering, credit, 6)
        settled_in = time.monotonic() - started
        _wait(lambda: len(_chain(chain).receipts) == 6, "6 receipts")
        _assert_each_once(chain, references)
        if settled_in < 2.0:  # all six inside the first wake-up's linger
            assert _delivery_calls(chain) == 1
        else:  # a slow machine: still fewer calls than settlements
            assert _delivery_calls(chain) < 6
