"""The outbox worker's rounds: after failed rounds it waits longer each time (the database
away costs a traceback once, not one per poll), and a round that works brings the interval
back."""

from __future__ import annotations

import logging
import statistics
import time

import anyio
import pytest

from gridweave_runtime.outbox_worker import FAILED_ROUND_MAX_WAIT_S, OutboxWorker

POLL_S = 0.01


class _Flaky(OutboxWorker):
    label = "test: the flaky worker"

    def __init__(self, failing_rounds: int) -> None:
        super().__init__(poll_seconds=POLL_S)
        self.failing_rounds = failing_rounds
        self.rounds: list[float] = []

    def deliver_round(self) -> bool:
        self.rounds.append(time.monotonic())
        if len(self.rounds) <= self.failing_rounds:
            raise ConnectionError("the database is away")
        return False


def _run_for(worker: OutboxWorker, seconds: float) -> None:
    async def main() -> None:
        with anyio.move_on_after(seconds):
            await worker.run()

    anyio.run(main)


def test_the_wait_doubles_after_each_failure_up_to_the_longest() -> None:
    worker = _Flaky(0)
    assert [worker.wait_seconds(n) for n in range(4)] == [POLL_S, POLL_S, 2 * POLL_S, 4 * POLL_S]
    assert worker.wait_seconds(40) == FAILED_ROUND_MAX_WAIT_S
    slow = _Flaky(0)
    slow.poll_seconds = 60.0
    assert slow.wait_seconds(3) == 60.0  # never shorter than the interval


def test_failed_rounds_back_off_log_one_traceback_and_recover(
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = _Flaky(failing_rounds=5)
    with caplog.at_level(logging.WARNING, logger="gridweave"):
        _run_for(worker, 1.5)
    # 5 failures wait 0.01 + 0.02 + 0.04 + 0.08 + 0.16 s; then every 0.01 s again
    gaps = [b - a for a, b in zip(worker.rounds, worker.rounds[1:], strict=False)]
    assert gaps[3] >= 8 * POLL_S and gaps[4] >= 16 * POLL_S, gaps[:6]
    # the interval came back after a round that worked (without, 0.16 s at the least)
    assert len(gaps) > 10 and statistics.median(gaps[6:]) < 8 * POLL_S, gaps
    failed = [r for r in caplog.records if "failed" in r.getMessage()]
    assert len(failed) == 5
    assert failed[0].exc_info is not None
    assert all(r.exc_info is None for r in failed[1:])
    assert failed[-1].getMessage().endswith("failed 5 rounds in a row: the database is away")


def test_a_wake_up_cuts_the_wait_after_a_failure_short() -> None:
    worker = _Flaky(failing_rounds=1)
    worker.poll_seconds = 30.0  # the wait after the failure: far longer than the test

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(worker.run)
            await anyio.sleep(0.2)
            worker.wake()
            await anyio.sleep(0.2)
            tasks.cancel_scope.cancel()

    anyio.run(main)
    assert len(worker.rounds) == 2
