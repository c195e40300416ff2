"""Racing setters on one object lose no update: every write is a guarded read-modify-write."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from gridweave_controller import JobPhase
from tests.contract.factories import make_job
from tests.contract.transports import Transport, see_status_writes

ROUNDS = 15


def test_two_threads_racing_requeues_lose_no_attempt(
    transport: Transport, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each requeue that was written counts exactly once in ``attempts``.

    Both threads blindly move the job Allocated -> Pending -> Allocated. A write computed
    from a stale read would count a requeue twice or lose one; with resourceVersion the
    loser re-reads and sees its move already done (a no-op). So the ``attempts`` values
    written are exactly 1..N with no repeat, and the final ``attempts`` is N.
    """
    job = make_job(transport)
    transport.api.set_job_allocated(job.name, "n1", [0])
    written_attempts: list[int] = []
    record_lock = threading.Lock()

    def record(written: dict[str, Any]) -> None:
        status = written.get("status") or {}
        if status.get("phase") == JobPhase.PENDING:
            with record_lock:
                written_attempts.append(int(status["attempts"]))

    see_status_writes(transport.served_store, monkeypatch, record)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            for _ in range(ROUNDS):
                transport.api.set_job_pending(job.name, "NodeLost")
                transport.api.set_job_allocated(job.name, "n1", [0])
        except BaseException as exc:  # surfaced below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    final = transport.api.get_job(job.name)
    assert sorted(written_attempts) == list(range(1, len(written_attempts) + 1))
    assert final.status.attempts == len(written_attempts)
    assert ROUNDS <= len(written_attempts) <= 2 * ROUNDS
