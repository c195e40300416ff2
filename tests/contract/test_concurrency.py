"""Racing setters on one object lose no update: every write is a guarded read-modify-write."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from gridweave_controller import JobPhase
from tests.contract.factories import make_job
from tests.contract.transports import Transport

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
    store = transport.client.store
    original_patch = store.patch_status
    written_attempts: list[int] = []
    record_lock = threading.Lock()

    def recording_patch(*args: Any) -> dict[str, Any]:
        result = original_patch(*args)
        status = result.get("status") or {}
        if status.get("phase") == JobPhase.PENDING:
            with record_lock:
                written_attempts.append(int(status["attempts"]))
        return result

    monkeypatch.setattr(store, "patch_status", recording_patch)
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
