"""The executor's warm-worker settings: a pool with no room past its spares is refused at
start, naming both settings (every attempt would take a fresh spare and its worker be
killed after it: never warm)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from job_gateway.execution.settings import ExecutionSettings


@pytest.mark.parametrize(("spares", "max_idle"), [(2, 2), (2, 1), (4, 3)])
def test_no_room_past_the_spares_is_refused_naming_both(
    monkeypatch: pytest.MonkeyPatch, spares: int, max_idle: int
) -> None:
    monkeypatch.setenv("GATEWAY_WARM_SPARES_PER_NODE", str(spares))
    monkeypatch.setenv("GATEWAY_MAX_IDLE_WORKERS_PER_NODE", str(max_idle))
    with pytest.raises(ValidationError) as refused:
        ExecutionSettings()
    message = str(refused.value)
    assert "max_idle_workers_per_node must be 0 (no warm workers)" in message
    assert f"warm_spares_per_node ({spares})" in message


@pytest.mark.parametrize(("spares", "max_idle"), [(2, 3), (2, 16), (0, 1), (2, 0), (0, 0)])
def test_room_for_a_released_worker_or_none_at_all_is_taken(spares: int, max_idle: int) -> None:
    settings = ExecutionSettings(warm_spares_per_node=spares, max_idle_workers_per_node=max_idle)
    assert (settings.warm.spares, settings.warm.max_idle) == (spares, max_idle)
