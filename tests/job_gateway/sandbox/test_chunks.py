"""A chunk of a map's inputs in one container run, on the real runtime (runc): each input's
result in order, an input that raises tried again up to the retries, then reported with its
traceback while the others go on."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import cloudpickle
import pytest

from job_gateway.sandbox.attempt import SandboxedJob, run_sandboxed
from job_gateway.sandbox.container import Chunk, ContainerRun
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


def run_chunk(
    sandbox: SandboxConfig, function: Any, inputs: list[int], retries: int
) -> ContainerRun:
    job = SandboxedJob("chunk-test-a", "nvidia", (0,), 1, {"CUDA_VISIBLE_DEVICES": "0"})
    calls: list[tuple[tuple[int], dict[str, Any]]] = [((x,), {}) for x in inputs]
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        return run_sandboxed(
            sandbox,
            job,
            function=cloudpickle.dumps(function),
            arguments=cloudpickle.dumps(calls),
            stdout=stdout.fileno(),
            stderr=stderr.fileno(),
            chunk=Chunk(items=len(calls), retries=retries),
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
