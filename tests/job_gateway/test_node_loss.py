"""The node-loss rule, pure: which jobs of a gone or NotReady node are requeued, and when."""

from __future__ import annotations

import pytest

from gridweave_controller.models import Job
from job_gateway.node_loss import decide_node_loss, node_is_lost
from tests.job_gateway.scheduling_factories import job_object, make_inventory, make_node

GRACE_S = 60.0


def _on(name: str, node: str, phase: str = "Allocated") -> Job:
    return job_object(name, phase=phase, node=node, gpu_indices=[0])


def _requeued(decision_jobs: tuple[tuple[Job, str], ...]) -> list[str]:
    return [job.name for job, _message in decision_jobs]


class TestNodeIsLost:
    def test_gone_and_notready_are_lost_cordoned_and_ready_are_not(self) -> None:
        inventory = make_inventory(
            make_node("ready", (1024,)),
            make_node("notready", (1024,), ready=False),
            make_node("cordoned", (1024, 1024), cordoned=(0, 1)),
        )
        assert not node_is_lost(inventory, "ready")
        assert node_is_lost(inventory, "notready")
        assert not node_is_lost(inventory, "cordoned")
        assert node_is_lost(inventory, "gone")


class TestDecideNodeLoss:
    def test_first_sight_starts_the_grace_period_and_requeues_nothing(self) -> None:
        inventory = make_inventory(make_node("a", ready=False))
        decision = decide_node_loss(
            inventory, [_on("j1", "a")], now=100.0, lost_since={}, grace_s=GRACE_S
        )
        assert decision.requeue == ()
        assert decision.lost_since == {"a": 100.0}

    def test_after_the_grace_period_allocated_and_running_jobs_are_requeued(self) -> None:
        inventory = make_inventory(make_node("b"))  # "a" is gone
        jobs = [
            _on("allocated", "a"),
            _on("running", "a", "Running"),
            _on("elsewhere", "b", "Running"),
            job_object("waiting"),
            _on("done", "a", "Completed"),
        ]
        decision = decide_node_loss(
            inventory, jobs, now=161.0, lost_since={"a": 100.0}, grace_s=GRACE_S
        )
        assert _requeued(decision.requeue) == ["allocated", "running"]
        assert decision.lost_since == {"a": 100.0}  # kept: the first sight counts
        assert decision.requeue[0][1] == "node a is gone from the inventory (for 61 s)"

    def test_within_the_grace_period_nothing_moves(self) -> None:
        inventory = make_inventory(make_node("a", ready=False))
        decision = decide_node_loss(
            inventory, [_on("j1", "a")], now=159.0, lost_since={"a": 100.0}, grace_s=GRACE_S
        )
        assert decision.requeue == ()
        assert decision.lost_since == {"a": 100.0}

    def test_a_notready_node_says_so(self) -> None:
        inventory = make_inventory(make_node("a", ready=False))
        decision = decide_node_loss(
            inventory, [_on("j1", "a")], now=0.0, lost_since={}, grace_s=0.0
        )
        assert [message for _job, message in decision.requeue] == ["node a is NotReady (for 0 s)"]

    def test_a_node_ready_again_forgets_its_loss(self) -> None:
        inventory = make_inventory(make_node("a"))
        decision = decide_node_loss(
            inventory, [_on("j1", "a")], now=500.0, lost_since={"a": 100.0}, grace_s=GRACE_S
        )
        assert decision.requeue == ()
        assert decision.lost_since == {}

    @pytest.mark.parametrize("phase", ["Allocated", "Running"])
    def test_a_cordoned_node_keeps_its_jobs(self, phase: str) -> None:
        inventory = make_inventory(make_node("a", (1024, 1024), cordoned=(0, 1)))
        decision = decide_node_loss(
            inventory, [_on("j1", "a", phase)], now=1e9, lost_since={"a": 0.0}, grace_s=GRACE_S
        )
        assert decision.requeue == ()
        assert decision.lost_since == {}

    def test_a_lost_node_without_jobs_is_not_remembered(self) -> None:
        inventory = make_inventory(make_node("a", ready=False))
        decision = decide_node_loss(inventory, [], now=10.0, lost_since={"a": 0.0}, grace_s=1.0)
        assert decision == decision.__class__({}, ())
