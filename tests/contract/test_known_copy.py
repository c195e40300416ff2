"""A setter given the caller's copy of the job (``known=``, an informer's) saves the read.

On every transport: a current copy costs one PATCH and no GET; a stale copy costs a
refused PATCH, then the usual read and move, so two placements of one job still have
exactly one winner; a copy never decides an outcome alone (a move it calls a no-op or
illegal is read again).
"""

from __future__ import annotations

import pytest

from gridweave_controller import Conflict, Invalid, InvalidTransition, JobPhase
from tests.contract.factories import make_job
from tests.contract.transports import Transport


class TestKnownCopy:
    def test_a_current_copy_is_one_patch_and_no_get(self, transport: Transport) -> None:
        job = make_job(transport)
        with transport.count_requests() as requests:
            allocated = transport.api.set_job_allocated(job.name, "n1", [0], known=job)
        assert requests == {"PATCH": 1}
        assert (allocated.phase, allocated.status.node) == (JobPhase.ALLOCATED, "n1")
        assert allocated.status.gpu_indices == (0,)

    def test_a_stale_copy_is_read_again_and_one_placement_wins(self, transport: Transport) -> None:
        job = make_job(transport)
        winner = transport.api.set_job_allocated(job.name, "n2", [1], known=job)
        with transport.count_requests() as requests, pytest.raises(Conflict) as caught:
            transport.api.set_job_allocated(job.name, "n1", [0], known=job)
        assert "n2" in str(caught.value)
        # read once and nothing written; in process the copy's PATCH is refused first,
        # while kuberay-service, which knows a newer version, reads without trying it
        assert requests["GET"] == 1 and requests["PATCH"] <= 1
        stored = transport.client.get_job(job.name)
        assert stored == winner
        assert (stored.status.node, stored.status.gpu_indices) == ("n2", (1,))

    def test_a_stale_copy_of_the_same_placement_is_a_no_op(self, transport: Transport) -> None:
        job = make_job(transport)
        first = transport.api.set_job_allocated(job.name, "n1", [0], known=job)
        again = transport.api.set_job_allocated(job.name, "n1", [0], known=job)
        assert again == first  # read again: already so, nothing written

    def test_a_copy_never_decides_alone(self, transport: Transport) -> None:
        """The copy says Allocated (a repeat, no write); the store was requeued: it writes."""
        job = make_job(transport)
        allocated = transport.api.set_job_allocated(job.name, "n1", [0])
        transport.client.set_job_pending(job.name, "NodeLost")
        placed = transport.api.set_job_allocated(job.name, "n1", [0], known=allocated)
        assert (placed.phase, placed.status.attempts) == (JobPhase.ALLOCATED, 1)
        copy = transport.client.get_job(job.name)
        transport.client.set_job_failed(job.name, "Lost")
        with pytest.raises(InvalidTransition):  # the copy says "done"; the store: Failed
            transport.api.set_job_allocated(job.name, "n1", [0], known=copy)
        assert transport.client.get_job(job.name).phase is JobPhase.FAILED

    def test_a_copy_of_another_job_is_refused_before_any_request(
        self, transport: Transport
    ) -> None:
        job, other = make_job(transport), make_job(transport)
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            transport.api.set_job_allocated(job.name, "n1", [0], known=other)
        assert caught.value.field == "known"
        assert sum(requests.values()) == 0

    def test_a_run_written_from_its_own_answers_is_one_patch_per_move(
        self, transport: Transport
    ) -> None:
        """The executor and the usage reporter pass each write's answer to the next: Running,
        the outcome and the usage mark cost one PATCH each, no read."""
        job = make_job(transport)
        allocated = transport.api.set_job_allocated(job.name, "n1", [0], known=job)
        with transport.count_requests() as requests:
            running = transport.api.set_job_running(job.name, known=allocated)
            done = transport.api.set_job_completed(job.name, 1.5, known=running)
            marked = transport.api.set_job_usage_reported(job.name, 7, known=done)
        assert requests == {"PATCH": 3}
        assert (running.phase, done.phase, marked.phase) == (
            JobPhase.RUNNING,
            JobPhase.COMPLETED,
            JobPhase.COMPLETED,
        )
        assert transport.client.get_job(job.name) == marked
        other = make_job(transport)
        placed = transport.api.set_job_allocated(other.name, "n1", [0], known=other)
        with transport.count_requests() as requests:
            failed = transport.api.set_job_failed(other.name, "Exception", "boom", known=placed)
        assert requests == {"PATCH": 1}
        assert (failed.phase, failed.status.reason) == (JobPhase.FAILED, "Exception")

    def test_a_stale_copy_of_a_finish_is_read_again(self, transport: Transport) -> None:
        """The copy says Allocated; the store says Cancelled: the finish is refused, not
        written over the cancel."""
        job = make_job(transport)
        allocated = transport.api.set_job_allocated(job.name, "n1", [0], known=job)
        transport.client.set_job_cancelled(job.name, "by its owner")
        with pytest.raises(InvalidTransition):
            transport.api.set_job_failed(job.name, "Exception", "boom", known=allocated)
        assert transport.client.get_job(job.name).phase is JobPhase.CANCELLED
