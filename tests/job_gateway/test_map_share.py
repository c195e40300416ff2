"""A worker's share of a map on the trusted side, with the container runs stood in for: a
chunk cut short by the function is recorded as its inputs' failure; a chunk cut short by
the worker's own teardown (its runtime killed from outside) records nothing and ends the
share, so the inputs it stopped are neither failed nor lost to a later attempt."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridweave_clients.maps import read_chunk_record
from gridweave_controller.models import MapShare
from gridweave_runtime.storage import LocalObjectStore, ObjectNotFound
from gridweave_runtime.storage.maps import map_objects
from job_gateway.execution.map_share import ShareStopped, run_share
from job_gateway.sandbox.container import ContainerRun

SHARE = MapShare(map_id="map-share-test", worker=0, workers=1, items=4, chunk_items=2)
OBJECTS = map_objects(SHARE.map_id)


def cut_short(*, runtime_killed: bool) -> ContainerRun:
    """A chunk's run that gave its first input's result and then ended."""
    first = ({"status": "ok", "attempts": 1}, b"one")
    return ContainerRun(
        header=None,
        payload=b"",
        exit_code=None,
        signal=9,
        oom_killed=False,
        error="the function's process was killed by signal 9",
        started_at=0.0,
        finished_at=1.0,
        results=(first,),
        runtime_killed=runtime_killed,
    )


@pytest.fixture
def store(tmp_path: Path) -> LocalObjectStore:
    store = LocalObjectStore(str(tmp_path))
    for chunk in (0, 1):
        store.put(OBJECTS.inputs(chunk), b"inputs")
    return store


def why(run: ContainerRun) -> str:
    return f"ProcessDied: {run.error}"


def test_a_chunk_the_function_cut_short_records_the_rest_as_failed(
    store: LocalObjectStore,
) -> None:
    progress = run_share(SHARE, store, lambda _, __: cut_short(runtime_killed=False), why)
    assert (progress.done, progress.failed) == (2, 2)
    _, _, results = read_chunk_record(store.get(store.uri(OBJECTS.outputs(0))))
    assert [r.status for r, _ in results] == ["ok", "exception"]
    assert results[1][0].message == "ProcessDied: the function's process was killed by signal 9"


def test_a_chunk_cut_short_by_the_workers_teardown_records_nothing(
    store: LocalObjectStore,
) -> None:
    with pytest.raises(ShareStopped, match="killed from outside the worker"):
        run_share(SHARE, store, lambda _, __: cut_short(runtime_killed=True), why)
    for key in (OBJECTS.outputs(0), OBJECTS.outputs(1), OBJECTS.progress(0)):
        with pytest.raises(ObjectNotFound):
            store.get(store.uri(key))
