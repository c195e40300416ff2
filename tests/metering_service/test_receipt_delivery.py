"""Every settlement's receipt reaches chain_service once: through outages, kills and replays."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from gridweave_clients.chain import verify_chain
from gridweave_clients.chain.models import ChainPageResponse
from tests.chain_service.factories import chain_settings, running_chain
from tests.metering_service.factories import (
    metering_settings,
    running_deliverer,
    running_metering,
    running_metering_and_deliverer,
    start_deliverer,
    unique,
    usage_body,
)
from tests.support.credit_server import CreditServer
from tests.support.http_server import free_port
from tests.support.postgres import PostgresTestServer
from tests.support.service_process import thread_niceness

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
    """The deliverer's ``METERING_RECEIPT_*`` for a test: short polls, retries and calls."""
    return {
        "poll_seconds": 0.05,
        "retry_seconds": 0.05,
        "max_retry_seconds": 0.2,
        "timeout_seconds": 2.0,
        **overrides,
    }


@contextmanager
def _delivering(
    databases: tuple[str, str], credit: CreditServer, tmp_path: Path, **overrides: object
) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """chain_service, metering's API and its receipt deliverer (a process of its own, fast
    retries); (metering, chain)."""
    metering_url, chain_url = databases
    with running_chain(chain_settings(chain_url, tmp_path / "chain")) as chain:
        settings = metering_settings(metering_url, credit.url, state_dir=tmp_path)
        with running_metering_and_deliverer(
            settings,
            str(chain.base_url),
            log=tmp_path / "deliverer.log",
            **_fast_retries(**overrides),
        ) as metering:
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
    settings = metering_settings(metering_url, credit.url, state_dir=tmp_path)
    with (
        running_metering(settings) as metering,
        running_deliverer(
            metering_url,
            f"http://127.0.0.1:{chain_port}",
            log=tmp_path / "deliverer.log",
            **_fast_retries(),
        ),
    ):
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


def test_the_deliverer_process_delivers_while_the_api_settles_without_it(
    databases: tuple[str, str], credit: CreditServer, tmp_path: Path
) -> None:
    """The API only queues (even with ``CHAIN_SERVICE_URL`` set); the deliverer, a process of
    its own, sends what was queued before it started and what the API settles meanwhile."""
    metering_url, chain_url = databases
    with running_chain(chain_settings(chain_url, tmp_path / "chain")) as chain:
        settings = metering_settings(
            metering_url, credit.url, state_dir=tmp_path, chain_service_url=str(chain.base_url)
        )
        with running_metering(settings) as metering:
            references = _settle(metering, credit, 5)
            time.sleep(1.0)  # 20 rounds of a deliverer polling every 0.05 s, had the API one
            assert [row[0] for row in _outbox(metering_url)] == ["queued"] * 5
            assert _chain(chain).receipts == []

            log = tmp_path / "deliverer.log"
            with running_deliverer(metering_url, str(chain.base_url), log=log, **_fast_retries()):
                references += _settle(metering, credit, 10)
                _wait(lambda: len(_chain(chain).receipts) == 15, f"15 receipts ({log.read_text()})")
                _wait(lambda: all(r[0] == "delivered" for r in _outbox(metering_url)), "marks")
            # stopped by SIGTERM (running_deliverer checks it exits 0); the API still settles
            references += _settle(metering, credit, 1)
            assert [row[0] for row in _outbox(metering_url)][-1] == "queued"

        _assert_each_once(chain, references[:15])
        assert [row[1] for row in _outbox(metering_url)][:15] == list(range(1, 16))


@contextmanager
def _claims(metering_url: str) -> Iterator[Callable[[], tuple[int, int]]]:
    """A reader of (rows claimed and not marked yet, rows delivered), on one connection."""
    engine = create_engine(metering_url, poolclass=NullPool)
    query = text(
        "SELECT count(*) FILTER (WHERE state = 'queued' AND attempts > 0), "
        "count(*) FILTER (WHERE state = 'delivered') FROM receipt_outbox"
    )
    try:
        with engine.connect() as connection:
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")

            def read() -> tuple[int, int]:
                row = connection.execute(query).one()
                return int(row[0]), int(row[1])

            yield read
    finally:
        engine.dispose()


def test_a_deliverer_killed_mid_round_loses_and_repeats_nothing(
    databases: tuple[str, str], credit: CreditServer, tmp_path: Path
) -> None:
    """SIGKILL while a round's receipts are claimed and not yet marked delivered: the lease
    runs out, the next deliverer sends them again, and chain_service answers replays."""
    metering_url, chain_url = databases
    count = 120
    with running_metering(metering_settings(metering_url, credit.url, state_dir=tmp_path)) as api:
        references = _settle(api, credit, count)
    assert [row[0] for row in _outbox(metering_url)] == ["queued"] * count

    options = {"batch_size": 4, "timeout_seconds": 0.5, "poll_seconds": 0.05}
    log = tmp_path / "deliverer.log"
    with (
        _claims(metering_url) as claims,
        running_chain(chain_settings(chain_url, tmp_path / "chain")) as chain,
    ):
        chain_url = str(chain.base_url)
        cut = 0
        for _ in range(5):  # a kill may land between two rounds: then try again
            deliverer = start_deliverer(metering_url, chain_url, log=log, **options)
            try:
                deadline = time.monotonic() + _DEADLINE_S
                while claims()[0] == 0:  # wait until a round holds claimed receipts
                    assert time.monotonic() < deadline, f"no round ({log.read_text()})"
                    time.sleep(0.001)
                deliverer.send_signal(signal.SIGKILL)
                deliverer.wait(timeout=10)
            finally:
                if deliverer.poll() is None:
                    deliverer.kill()
                    deliverer.wait(timeout=10)
            cut, delivered = claims()
            assert delivered < count, "the deliverer finished before it could be killed"
            if cut:
                break
        assert cut > 0, "no kill landed inside a round"

        with running_deliverer(metering_url, chain_url, log=log, **options):
            _wait(
                lambda: all(row[0] == "delivered" for row in _outbox(metering_url)),
                f"the rest ({log.read_text()})",
            )

        _assert_each_once(chain, references)
        rows = _outbox(metering_url)
        assert sorted(row[1] for row in rows) == list(range(1, count + 1))  # type: ignore[type-var]
        assert sum(1 for row in rows if row[2] >= 2) >= cut  # the cut round's, sent again


def _delivery_calls(chain: httpx.Client) -> float:
    """The calls chain_service answered on its receipt routes (one or a batch each)."""
    calls = 0.0
    for line in chain.get("/metrics").text.splitlines():
        if line.startswith("gridweave_http_requests_total{") and 'route="/v1/receipts' in line:
            calls += float(line.rsplit(" ", 1)[1])
    return calls


def test_settlements_between_two_polls_share_one_delivery_call(
    databases: tuple[str, str], credit: CreditServer, tmp_path: Path
) -> None:
    """The deliverer polls: the receipts queued between two looks go in one call."""
    with _delivering(databases, credit, tmp_path, poll_seconds=3.0) as (metering, chain):
        started = time.monotonic()
        references = _settle(metering, credit, 6)
        settled_in = time.monotonic() - started
        _wait(lambda: len(_chain(chain).receipts) == 6, "6 receipts")
        _assert_each_once(chain, references)
        if settled_in < 3.0:  # at most one look fell among the six settlements
            assert _delivery_calls(chain) <= 2
        else:  # a slow machine: still fewer calls than settlements
            assert _delivery_calls(chain) < 6


class TestDelivererNiceness:
    """``METERING_RECEIPT_NICENESS``: the deliverer runs below the settling requests."""

    @pytest.mark.parametrize(("setting", "expected"), [({}, 10), ({"niceness": 7}, 7)])
    def test_every_thread_runs_at_the_setting(
        self,
        databases: tuple[str, str],
        tmp_path: Path,
        setting: dict[str, object],
        expected: int,
    ) -> None:
        log = tmp_path / "deliverer.log"
        chain_url = f"http://127.0.0.1:{free_port()}"
        with running_deliverer(databases[0], chain_url, log=log, **setting) as process:
            _wait(lambda: "delivering receipts to" in log.read_text(), "the deliverer's start")
            niceness = thread_niceness(process.pid)
        assert niceness == {expected}

    def test_zero_leaves_it_as_started(self, databases: tuple[str, str], tmp_path: Path) -> None:
        log = tmp_path / "deliverer.log"
        chain_url = f"http://127.0.0.1:{free_port()}"
        with running_deliverer(databases[0], chain_url, log=log, niceness=0) as process:
            _wait(lambda: "delivering receipts to" in log.read_text(), "the deliverer's start")
            niceness = thread_niceness(process.pid)
        assert niceness == {os.getpriority(os.PRIO_PROCESS, 0)}
