"""metav1.Condition semantics of the pure condition helpers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from gridweave_controller import Invalid
from gridweave_controller.conditions import ConditionStatus, format_timestamp, set_condition
from gridweave_controller.validation import check_reason

T0 = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def test_timestamps_are_rfc3339_utc_with_z() -> None:
    assert format_timestamp(T0) == "2026-01-02T03:04:05Z"
    plus_two = timezone(timedelta(hours=2))
    assert format_timestamp(T0.astimezone(plus_two)) == "2026-01-02T03:04:05Z"
    with pytest.raises(ValueError):
        format_timestamp(datetime(2026, 1, 1))


@pytest.mark.parametrize("reason", ["NodeLost", "A", "OOM_Killed", "Reason:Sub,Detail"])
def test_valid_reasons(reason: str) -> None:
    assert check_reason(reason) == reason


@pytest.mark.parametrize("reason", ["", "node lost", "1Up", "Trailing:", "Bad-Reason", "x" * 1025])
def test_invalid_reasons_name_the_field(reason: str) -> None:
    with pytest.raises(Invalid) as caught:
        check_reason(reason)
    assert caught.value.field == "reason"


class TestSetCondition:
    def test_new_condition_gets_now_and_generation(self) -> None:
        [condition] = set_condition(
            [],
            type_="Ready",
            status=ConditionStatus.FALSE,
            reason="Deploying",
            message="m",
            observed_generation=3,
            now=T0,
        )
        assert condition == {
            "type": "Ready",
            "status": "False",
            "reason": "Deploying",
            "message": "m",
            "lastTransitionTime": "2026-01-02T03:04:05Z",
            "observedGeneration": 3,
        }

    def test_transition_time_kept_unless_status_flips(self) -> None:
        first = set_condition(
            [],
            type_="Healthy",
            status=ConditionStatus.TRUE,
            reason="Healthy",
            message="a",
            observed_generation=1,
            now=T0,
        )
        same = set_condition(
            first,
            type_="Healthy",
            status=ConditionStatus.TRUE,
            reason="StillHealthy",
            message="b",
            observed_generation=2,
            now=T1,
        )
        assert same[0]["lastTransitionTime"] == "2026-01-02T03:04:05Z"
        assert (same[0]["reason"], same[0]["message"], same[0]["observedGeneration"]) == (
            "StillHealthy",
            "b",
            2,
        )
        flipped = set_condition(
            same,
            type_="Healthy",
            status=ConditionStatus.FALSE,
            reason="Unhealthy",
            message="c",
            observed_generation=2,
            now=T1,
        )
        assert flipped[0]["lastTransitionTime"] == "2026-01-02T03:09:05Z"

    def test_other_types_untouched_and_input_not_modified(self) -> None:
        existing = [
            {
                "type": "Allocated",
                "status": "True",
                "reason": "NodeAllocated",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "observedGeneration": 1,
            }
        ]
        snapshot = [dict(c) for c in existing]
        result = set_condition(
            existing,
            type_="Running",
            status=ConditionStatus.TRUE,
            reason="Started",
            message="",
            observed_generation=1,
            now=T0,
        )
        assert existing == snapshot
        assert [c["type"] for c in result] == ["Allocated", "Running"]
        assert result[0] == snapshot[0]

    def test_bad_reason_is_refused(self) -> None:
        with pytest.raises(Invalid):
            set_condition(
                [],
                type_="Ready",
                status=ConditionStatus.TRUE,
                reason="not valid",
                message="",
                observed_generation=1,
                now=T0,
            )
