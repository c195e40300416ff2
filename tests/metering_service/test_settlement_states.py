"""The settlement state machine: every pair of states, allowed and refused."""

from __future__ import annotations

import itertools

import pytest

from gridweave_clients.credit.models import AccountResponse, HoldResponse
from metering_service.models import SettlementState, UsageRecordModel
from metering_service.services.settlement import ALLOWED_SETTLEMENT_MOVES, switch_settlement_state

STATES = (SettlementState.PENDING, SettlementState.SETTLED, SettlementState.REFUSED)
ALLOWED = {
    (SettlementState.PENDING, SettlementState.PENDING),
    (SettlementState.PENDING, SettlementState.SETTLED),
    (SettlementState.PENDING, SettlementState.REFUSED),
    (SettlementState.REFUSED, SettlementState.PENDING),
    (SettlementState.REFUSED, SettlementState.SETTLED),
    (SettlementState.REFUSED, SettlementState.REFUSED),
}
HOLD = HoldResponse(
    hold_id=7,
    user_id="u-1",
    amount=500,
    captured=300,
    released=200,
    status="captured",
    reference="job-1",
    account=AccountResponse(user_id="u-1", balance=700, held=0, available=700),
)


def _record(state: str) -> UsageRecordModel:
    return UsageRecordModel(settlement_state=state, settlement_attempts=0, settlement_amount=300)


def test_the_table_lists_exactly_the_allowed_moves() -> None:
    declared = {(a, b) for a, targets in ALLOWED_SETTLEMENT_MOVES.items() for b in targets}

    assert declared == ALLOWED


@pytest.mark.parametrize(("source", "target"), sorted(ALLOWED))
def test_an_allowed_move_is_noted_as_one_attempt(source: str, target: str) -> None:
    record = _record(source)

    switch_settlement_state(
        record, target, hold=HOLD, error_code="x" if target != "settled" else None
    )

    assert (record.settlement_state, record.settlement_attempts) == (target, 1)
    if target == SettlementState.SETTLED:
        assert (record.charged, record.hold_id, record.settlement_error_code) == (300, 7, None)


@pytest.mark.parametrize(
    ("source", "target"),
    sorted(set(itertools.product(STATES, STATES)) - ALLOWED),
)
def test_a_refused_move_changes_nothing(source: str, target: str) -> None:
    record = _record(source)

    with pytest.raises(ValueError, match=f"from {source} to {target}"):
        switch_settlement_state(record, target, hold=HOLD)

    assert (record.settlement_state, record.settlement_attempts) == (source, 0)
