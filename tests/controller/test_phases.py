"""The phase machines, walked over every pair of phases."""

from __future__ import annotations

import itertools

import pytest

from gridweave_controller import EndpointPhase, InvalidTransition, JobPhase
from gridweave_controller.phases import (
    JOB_TERMINAL_PHASES,
    check_endpoint_move,
    check_job_move,
)

J, E = JobPhase, EndpointPhase

#: The job moves DESIGN.md allows, written out independently of the module under test.
ALLOWED_JOB_MOVES = {
    (J.PENDING, J.ALLOCATED),
    (J.ALLOCATED, J.RUNNING),
    (J.RUNNING, J.COMPLETED),
    (J.RUNNING, J.FAILED),
    (J.RUNNING, J.CANCELLED),
    (J.RUNNING, J.TIMED_OUT),
    (J.PENDING, J.FAILED),
    (J.PENDING, J.CANCELLED),
    (J.ALLOCATED, J.FAILED),
    (J.ALLOCATED, J.CANCELLED),
    (J.ALLOCATED, J.PENDING),
    (J.RUNNING, J.PENDING),
}

ALLOWED_ENDPOINT_MOVES = {
    (E.PENDING, E.DEPLOYING),
    (E.DEPLOYING, E.RUNNING),
    (E.RUNNING, E.STOPPED),
    (E.RUNNING, E.FAILED),
    (E.RUNNING, E.DEPLOYING),
    (E.STOPPED, E.DEPLOYING),
    (E.FAILED, E.DEPLOYING),
    # Gridweave's additions: stopped or failed before it ever ran.
    (E.PENDING, E.STOPPED),
    (E.PENDING, E.FAILED),
    (E.DEPLOYING, E.STOPPED),
    (E.DEPLOYING, E.FAILED),
    # back to placement when the node it was placed on is lost
    (E.DEPLOYING, E.PENDING),
    (E.RUNNING, E.PENDING),
}


class TestJobPhaseMachine:
    @pytest.mark.parametrize(("current", "target"), list(itertools.product(J, J)))
    def test_every_pair(self, current: JobPhase, target: JobPhase) -> None:
        if current == target:
            assert check_job_move("job-1", current, target) is False
        elif (current, target) in ALLOWED_JOB_MOVES:
            assert check_job_move("job-1", current, target) is True
        else:
            with pytest.raises(InvalidTransition) as caught:
                check_job_move("job-1", current, target)
            assert (caught.value.current, caught.value.target) == (current.value, target.value)
            assert current.value in str(caught.value) and target.value in str(caught.value)
            assert "job-1" in str(caught.value)

    def test_terminal_phases_have_no_way_out(self) -> None:
        assert JOB_TERMINAL_PHASES == {J.COMPLETED, J.FAILED, J.CANCELLED, J.TIMED_OUT}
        assert not any(current in JOB_TERMINAL_PHASES for current, _ in ALLOWED_JOB_MOVES)


class TestEndpointPhaseMachine:
    @pytest.mark.parametrize(("current", "target"), list(itertools.product(E, E)))
    def test_every_pair(self, current: EndpointPhase, target: EndpointPhase) -> None:
        if current == target:
            assert check_endpoint_move("ep-1", current, target) is False
        elif (current, target) in ALLOWED_ENDPOINT_MOVES:
            assert check_endpoint_move("ep-1", current, target) is True
        else:
            with pytest.raises(InvalidTransition) as caught:
                check_endpoint_move("ep-1", current, target)
            assert (caught.value.current, caught.value.target) == (current.value, target.value)
