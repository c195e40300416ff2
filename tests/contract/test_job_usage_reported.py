"""set_job_usage_reported through every transport: a condition on a terminal job, once."""

from __future__ import annotations

import pytest

from gridweave_controller import Conflict, Invalid, InvalidTransition, JobPhase
from tests.contract.factories import make_job, run_job
from tests.contract.transports import Transport


def completed(transport: Transport) -> str:
    """A job run to Completed; its name."""
    job = run_job(transport)
    transport.api.set_job_completed(job.name, 12.5)
    return str(job.name)


class TestSetJobUsageReported:
    def test_marks_a_terminal_job_without_moving_it(self, transport: Transport) -> None:
        name = completed(transport)
        before = transport.client.get_job(name)
        marked = transport.api.set_job_usage_reported(name, 42)
        assert marked.phase is JobPhase.COMPLETED
        condition = marked.status.condition("UsageReported")
        assert condition is not None
        assert (condition.status, condition.reason, condition.message) == (
            "True",
            "Reported",
            "42",
        )
        # the finished figures stay as they were
        assert marked.status.wall_seconds == before.status.wall_seconds == 12.5
        assert marked.status.finished_at == before.status.finished_at
        assert marked.status.condition("Finished") == before.status.condition("Finished")

    def test_a_marked_job_still_refuses_every_phase_change(self, transport: Transport) -> None:
        name = completed(transport)
        transport.api.set_job_usage_reported(name, 7)
        with pytest.raises(InvalidTransition):
            transport.api.set_job_pending(name, "Requeued")
        with pytest.raises(InvalidTransition):
            transport.api.set_job_failed(name, "Lost")
        assert transport.client.get_job(name).phase is JobPhase.COMPLETED

    def test_repeating_the_mark_writes_nothing(self, transport: Transport) -> None:
        name = completed(transport)
        first = transport.api.set_job_usage_reported(name, 9)
        with transport.count_requests() as requests:
            same = transport.api.set_job_usage_reported(name, 9)
        assert requests == {"GET": 1}
        assert same.metadata.resource_version == first.metadata.resource_version

    def test_another_usage_record_is_a_conflict(self, transport: Transport) -> None:
        name = completed(transport)
        transport.api.set_job_usage_reported(name, 9)
        with pytest.raises(Conflict, match="usage record 9"):
            transport.api.set_job_usage_reported(name, 10)

    @pytest.mark.parametrize("end", ["failed", "cancelled", "timed_out"])
    def test_every_terminal_phase_takes_the_mark(self, transport: Transport, end: str) -> None:
        job = run_job(transport)
        arguments = ("Crashed",) if end == "failed" else ()
        getattr(transport.api, f"set_job_{end}")(job.name, *arguments)
        marked = transport.api.set_job_usage_reported(job.name, 3)
        assert marked.status.condition("UsageReported") is not None

    def test_a_job_still_in_flight_is_a_conflict(self, transport: Transport) -> None:
        job = run_job(transport)
        with pytest.raises(Conflict, match="once it has finished"):
            transport.api.set_job_usage_reported(job.name, 3)
        assert transport.client.get_job(job.name).status.condition("UsageReported") is None

    def test_usage_id_is_checked_before_any_request(self, transport: Transport) -> None:
        job = make_job(transport)
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            transport.api.set_job_usage_reported(job.name, 0)
        assert caught.value.field == "usage_id"
        assert sum(requests.values()) == 0


def cancelled_while_pending(transport: Transport) -> str:
    """A job cancelled before it held a GPU; its name."""
    job = make_job(transport)
    transport.api.set_job_cancelled(job.name)
    return str(job.name)


class TestSetJobHoldReleased:
    def test_marks_a_job_that_never_held_a_gpu(self, transport: Transport) -> None:
        name = cancelled_while_pending(transport)
        marked = transport.api.set_job_hold_released(name)
        assert marked.phase is JobPhase.CANCELLED
        condition = marked.status.condition("UsageReported")
        assert condition is not None
        assert (condition.status, condition.reason) == ("True", "HoldReleased")

    def test_repeating_the_mark_writes_nothing(self, transport: Transport) -> None:
        name = cancelled_while_pending(transport)
        first = transport.api.set_job_hold_released(name)
        with transport.count_requests() as requests:
            same = transport.api.set_job_hold_released(name)
        assert requests == {"GET": 1}
        assert same.metadata.resource_version == first.metadata.resource_version

    def test_a_job_that_held_a_gpu_is_a_conflict(self, transport: Transport) -> None:
        name = completed(transport)
        with pytest.raises(Conflict, match="held a GPU"):
            transport.api.set_job_hold_released(name)
        assert transport.client.get_job(name).status.condition("UsageReported") is None

    def test_a_job_still_pending_is_a_conflict(self, transport: Transport) -> None:
        job = make_job(transport)
        with pytest.raises(Conflict, match="once it has finished"):
            transport.api.set_job_hold_released(job.name)

    def test_a_job_whose_lost_attempt_ran_is_a_conflict(self, transport: Transport) -> None:
        job = run_job(transport)
        transport.api.set_job_pending(job.name, "WorkerLost", wall_seconds=3.0)
        transport.api.set_job_cancelled(job.name)  # before it was placed again
        with pytest.raises(Conflict, match="held a GPU"):
            transport.api.set_job_hold_released(job.name)

    def test_one_mark_per_job_a_released_hold_refuses_a_usage_record(
        self, transport: Transport
    ) -> None:
        name = cancelled_while_pending(transport)
        transport.api.set_job_hold_released(name)
        with pytest.raises(Conflict, match="settled with its hold released"):
            transport.api.set_job_usage_reported(name, 5)
