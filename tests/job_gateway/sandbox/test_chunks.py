"""A chunk of a map's inputs in one container run, on the real runtime (runc): each input's
result in order, an input that raises tried again up to the retries, then reported with its
traceback while the others go on."""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import cloudpickle
import pytest

from job_gateway.sandbox.attempt import SandboxedJob, container_spec, run_sandboxed
from job_gateway.sandbox.cgroups import cgroup_processes
from job_gateway.sandbox.container import Chunk, Container, ContainerRun
from job_gateway.sandbox.settings import SandboxConfig
from tests.job_gateway.sandbox import chunk_probes
from tests.support.sandbox import sandbox_config

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxConfig]:
    cloudpickle.register_pickle_by_value(chunk_probes)
    try:
        yield sandbox_config()
    finally:
        cloudpickle.unregister_pickle_by_value(chunk_probes)


JOB = SandboxedJob("chunk-test-a", "nvidia", (0,), 1, {"CUDA_VISIBLE_DEVICES": "0"})


def calls_of(inputs: list[int]) -> list[tuple[tuple[int], dict[str, Any]]]:
    return [((x,), {}) for x in inputs]


def run_chunk(
    sandbox: SandboxConfig, function: Any, inputs: list[int], retries: int
) -> ContainerRun:
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        return run_sandboxed(
            sandbox,
            JOB,
            function=cloudpickle.dumps(function),
            arguments=cloudpickle.dumps(calls_of(inputs)),
            stdout=stdout.fileno(),
            stderr=stderr.fileno(),
            chunk=Chunk(items=len(inputs), retries=retries),
        )


class TestChunk:
    def test_each_inputs_result_in_order_and_a_failure_does_not_stop_the_rest(
        self, sandbox: SandboxConfig
    ) -> None:
        run = run_chunk(sandbox, chunk_probes.square_unless_three, [1, 2, 3, 4], retries=2)
        assert run.error is None and len(run.results) == 4
        statuses = [header["status"] for header, _ in run.results]
        assert statuses == ["ok", "ok", "exception", "ok"]
        values = [cloudpickle.loads(p) for h, p in run.results if h["status"] == "ok"]
        assert values == [1, 4, 16]
        failed = run.results[2][0]
        assert failed["attempts"] == 3  # tried, then twice again
        assert failed["message"] == "ValueError: three is refused"
        assert "in square_unless_three" in failed["traceback"]

    def test_an_input_that_fails_once_succeeds_on_its_retry(self, sandbox: SandboxConfig) -> None:
        run = run_chunk(sandbox, chunk_probes.fails_first_time, [7, 8], retries=1)
        assert [(h["status"], h["attempts"]) for h, _ in run.results] == [("ok", 2), ("ok", 2)]
        assert [cloudpickle.loads(p) for _, p in run.results] == [107, 108]

    def test_without_retries_a_failure_is_reported_at_once(self, sandbox: SandboxConfig) -> None:
        run = run_chunk(sandbox, chunk_probes.fails_first_time, [9], retries=0)
        assert [(h["status"], h["attempts"]) for h, _ in run.results] == [("exception", 1)]


class TestCutShort:
    """A chunk cut short says whether the function ended itself or the worker's runtime
    was killed (a cancel tears the worker down): only the first is the inputs' failure."""

    def test_a_function_that_kills_itself_is_the_inputs_failure(
        self, sandbox: SandboxConfig
    ) -> None:
        run = run_chunk(sandbox, chunk_probes.dies_on_two, [1, 2, 3], retries=0)
        assert [h["status"] for h, _ in run.results] == ["ok"]
        assert run.runtime_killed is False
        assert run.error == "the function's process was killed by signal 9"

    def test_a_runtime_killed_from_outside_is_said_so(self, sandbox: SandboxConfig) -> None:
        container = Container(container_spec(sandbox, JOB))
        killer = threading.Thread(target=_kill_runtime_once_busy, args=(container,))
        killer.start()
        try:
            with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
                run = container.run(
                    function=cloudpickle.dumps(chunk_probes.sleeps_on_two),
                    arguments=cloudpickle.dumps(calls_of([1, 2, 3])),
                    environment={},
                    stdout=stdout.fileno(),
                    stderr=stderr.fileno(),
                    chunk=Chunk(items=3),
                )
        finally:
            killer.join()
            container.close()
        assert [h["status"] for h, _ in run.results] == ["ok"]
        assert run.runtime_killed is True
        assert not container.clean()


def _kill_runtime_once_busy(container: Container) -> None:
    """SIGKILL the container's runtime once the function runs beside pid 1 (as Ray kills a
    worker's children when the worker is killed)."""
    deadline = time.monotonic() + 60
    while cgroup_processes(container.cgroup) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(container._pid, signal.SIGKILL)
