"""A worker that fails itself ends the attempt WorkerError, saying what failed.

Before, an exception of the worker's own code (the runtime refusing to start the container,
a store write that failed) left no outcome record, and the gateway could say only that the
worker "died", with its Ray actor alive.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gridweave_runtime.storage import LocalObjectStore, StorageConfig, attempt_objects
from job_gateway.execution import worker
from job_gateway.execution.outcome import WORKER_ERROR, outcome_key, parse_outcome
from job_gateway.execution.worker import AttemptSpec
from tests.job_gateway.execution_factories import attempt_spec


def _spec_and_store(tmp_path: Path, job_id: str) -> tuple[AttemptSpec, LocalObjectStore]:
    """An attempt of ``job_id`` whose function is stored (never unpickled here), and its store."""
    store = LocalObjectStore(tmp_path / "objects")
    function_ref = store.put(f"jobs/{job_id}/function.pkl", b"never unpickled here")
    storage = StorageConfig(root=str(tmp_path / "objects"))
    return attempt_spec(job_id, function_ref, storage), store


def test_an_error_of_the_worker_is_the_attempts_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, store = _spec_and_store(tmp_path, "broken")

    def runtime_refuses(*_: Any) -> Any:
        raise OSError("runc create: cannot allocate memory")

    monkeypatch.setattr(worker, "_run_in_sandbox", runtime_refuses)
    monkeypatch.setattr(worker, "_ray_node_id", lambda: "")  # no Ray here

    returned = worker.run_attempt(spec)

    stored = parse_outcome(store.get(store.uri(outcome_key("broken", 0))))
    assert stored == returned
    assert (stored.status, stored.reason, stored.exception_type) == (
        "exception",
        WORKER_ERROR,
        WORKER_ERROR,
    )
    assert stored.message == (
        "the job's worker failed: OSError: runc create: cannot allocate memory"
    )
    assert not stored.reusable, "a worker that failed itself is never kept warm"
    assert stored.function_started, "the seconds it ran are billed like any attempt's"
    error = store.get(store.uri(attempt_objects("broken", 0).error)).decode()
    assert error == f"{stored.message}\n"


def test_a_store_that_refuses_the_outcome_too_leaves_the_error_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing can be recorded: the error is the actor's, the gateway sees the attempt lost."""
    spec, _ = _spec_and_store(tmp_path, "gone")

    class Refusing(LocalObjectStore):
        def put(self, key: str, data: bytes) -> str:
            raise OSError("the disk is full")

    monkeypatch.setattr(worker, "open_object_store", lambda _: Refusing(tmp_path / "objects"))
    monkeypatch.setattr(worker, "_ray_node_id", lambda: "")
    monkeypatch.setattr(
        worker, "_run_in_sandbox", lambda *_: worker._failed("Exception", "it raised")
    )
    with pytest.raises(OSError, match="the disk is full"):
        worker.run_attempt(spec)
