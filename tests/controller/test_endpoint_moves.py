"""The status endpoint moves write (pure): one run at a time, no billing history."""

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


class TestNoRunHistory:
    def test_a_placement_after_many_runs_keeps_only_the_current_one(self) -> None:
        status: dict[str, Any] = {}
        for run in range(5):
            at = T0 + timedelta(minutes=10 * run)
            status = _move(
                status,
                moves.deploying("ep", status, node=f"n{run}", gpu_indices=[0], vendor=None, now=at),
                at,
            )
            status = _move(status, moves.running("ep", status, url="http://x", now=at), at)
            stop = at + timedelta(minutes=1)
            status = _move(
                status, moves.stopped("ep", status, reason="Idle", message="", now=stop), stop
            )
            ended = EndpointStatus.model_validate(status)
            assert (ended.started_at, ended.stopped_at) == (at, stop)
        assert not [key for key in status if key.startswith(("previous", "earlier"))]
        assert EndpointStatus.model_validate(status).billed_seconds == 5 * 60

    def test_the_crd_keeps_no_replaced_run(self) -> None:
        crd = yaml.safe_load(CRD.read_text())
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        fields = schema["properties"]["status"]["properties"]
        assert not [key for key in fields if key.startswith(("previous", "earlier"))]


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
