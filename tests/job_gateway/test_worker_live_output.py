"""A running attempt's output reaches the object store while it runs (the live log reads it),
each upload carrying only what is new.

The attempt runs in a process of its own, as in a Ray worker: its file descriptors 1 and 2
are real (pytest's capture replaces only this process's ``sys.stdout``).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import cloudpickle
import pytest

from gridweave_runtime.storage import (
    LocalObjectStore,
    ObjectNotFound,
    StorageConfig,
    attempt_objects,
    log_part_key,
    log_parts_uri,
    read_log,
)
from job_gateway.execution.live_output import LIVE_OUTPUT_SECONDS
from tests.job_gateway.execution_factories import attempt_spec
from tests.support.waiting import wait_until

GAP_S = 4.0  # between the function's lines: room for an upload on a loaded machine

# no Ray here: the outcome's node id is then empty (as for a direct call), and no local Ray
# instance is started by asking for it
RUN = (
    "import pickle, sys\n"
    "sys.modules['ray'] = None\n"
    "from job_gateway.execution.worker import run_attempt\n"
    "outcome = run_attempt(pickle.load(open(sys.argv[1], 'rb')))\n"
    "print('reusable', outcome.reusable, file=sys.__stderr__)\n"
)


def _talker() -> str:
    import sys
    import time

    print("first line", flush=True)
    sys.stderr.write("a warning\n")
    time.sleep(GAP_S)
    print("second line", flush=True)
    time.sleep(GAP_S)
    print("last line")  # not flushed by the function: the end writes it
    return "done"


def test_output_is_in_the_store_while_the_attempt_runs(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # as a user's own module
    try:
        function_ref = store.put("jobs/live/function.pkl", cloudpickle.dumps(_talker))
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    storage = StorageConfig(root=str(tmp_path / "objects"))
    (tmp_path / "spec.pkl").write_bytes(pickle.dumps(attempt_spec("live", function_ref, storage)))
    objects = attempt_objects("live", 0)
    environment = {
        k: v for k, v in os.environ.items() if k != "RAY_ADDRESS" and not k.startswith("GRIDWEAVE_")
    }
    process = subprocess.Popen(
        [sys.executable, "-c", RUN, str(tmp_path / "spec.pkl")],
        env=environment,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout = store.uri(objects.stdout)
    parts: set[str] = set()

    def read() -> bytes:
        parts.update(store.list_names(log_parts_uri(stdout)))
        return read_log(store, stdout).data

    # the interpreter's start is the machine's pace; from the first line on, the function's
    wait_until(lambda: read() != b"", timeout=60, what="the first line")
    deadline = time.monotonic() + 2 * GAP_S - 0.5  # the function ends 2 gaps after it
    seen = read()
    while time.monotonic() < deadline and seen != b"first line\nsecond line\n":
        time.sleep(0.05)
        seen = read()
    running = process.poll() is None
    _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
    assert seen == b"first line\nsecond line\n" and running, "stdout was not in the store"
    assert LIVE_OUTPUT_SECONDS <= 1.0
    # each upload carried only what was new: one part per line, none sent twice
    assert sorted(parts) == [
        log_part_key("", 0, 11).split("/")[-1],
        log_part_key("", 11, 23).split("/")[-1],
    ]
    assert store.get(stdout) == b"first line\nsecond line\nlast line\n"
    assert store.get(store.uri(objects.stderr)) == b"a warning\n"
    assert store.list_names(log_parts_uri(stdout)) == []  # the parts went with the end
    with pytest.raises(ObjectNotFound):
        store.size(log_parts_uri(stdout))
    assert "reusable True" in errors  # the container is gone: nothing of the job is left
