"""The status endpoint moves write (pure): replaced runs kept for billing, bounded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from gridweave_controller import _endpoint_moves as moves
from gridweave_controller._status_change import apply_change
from gridweave_controller.models import EndpointStatus

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
CRD = Path(__file__).parents[2] / "k8s" / "gridweave-endpoint-crd.yaml"


def _move(status: dict[str, Any], change: Any, now: datetime) -> dict[str, Any]:
    assert change is not None
    return apply_change(status, change, generation=1, now=now)


class TestEarlierRuns:
    def test_every_replaced_run_is_kept_until_the_bound_drops_the_oldest(self) -> None:
        status: dict[str, Any] = {}
        starts: list[datetime] = []
        for run in range(moves.EARLIER_RUNS_KEPT + 3):
            at = T0 + timedelta(minutes=10 * run)
            node = f"node-{run}"
            status = _move(
                status,
                moves.deploying("ep", status, node=node, gpu_indices=[0], vendor=None, now=at),
                at,
            )
            status = _move(status, moves.running("ep", status, url="http://x", now=at), at)
            starts.append(at)
            stop = at + timedelta(minutes=1)
            status = _move(
                status, moves.stopped("ep", status, reason="Idle", message="", now=stop), stop
            )
            if run == 1:  # a wake now replaces run 1: run 0 is kept beside previous* (run 1)
                wake = stop + timedelta(seconds=1)
                woken = moves.deploying(
                    "ep", status, node="n", gpu_indices=[0], vendor=None, now=wake
                )
                kept = EndpointStatus.model_validate(_move(status, woken, wake))
                assert kept.previous_started_at == starts[1]
                assert [(r.started_at, r.stopped_at, r.node) for r in kept.earlier_runs] == [
                    (starts[0], starts[0] + timedelta(minutes=1), "node-0")
                ]
        parsed = EndpointStatus.model_validate(status)
        # the last run is current (stopped); previous* the one before; earlierRuns the
        # EARLIER_RUNS_KEPT before that, oldest first
        assert parsed.previous_started_at == starts[-2]
        assert [r.started_at for r in parsed.earlier_runs] == starts[
            -2 - moves.EARLIER_RUNS_KEPT : -2
        ]

    def test_the_crd_admits_as_many_as_the_move_keeps(self) -> None:
        crd = yaml.safe_load(CRD.read_text())
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        earlier = schema["properties"]["status"]["properties"]["earlierRuns"]
        assert earlier["maxItems"] == moves.EARLIER_RUNS_KEPT


class TestPlacedAt:
    def test_each_placement_writes_when_it_was_made(self) -> None:
        status: dict[str, Any] = {}
        change = moves.deploying("ep", status, node="n", gpu_indices=[0], vendor=None, now=T0)
        status = _move(status, change, T0)
        assert EndpointStatus.model_validate(status).placed_at == T0
        later = T0 + timedelta(minutes=5)
        lost = moves.pending("ep", status, reason="NodeLost", message="", now=later)
        status = _move(status, lost, later)
        again = later + timedelta(seconds=1)
        status = _move(
            status,
            moves.deploying("ep", status, node="n", gpu_indices=[0], vendor=None, now=again),
            again,
        )
        assert EndpointStatus.model_validate(status).placed_at == again
