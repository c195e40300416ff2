"""The gateway's start pauses the cyclic collector and leaves it as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from job_gateway.collector import collector_paused


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """Whatever a test does to the collector is undone after it."""
    running = gc.isenabled()
    yield
    gc.unfreeze()
    if running:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector_restored")
class TestCollectorPaused:
    def test_paused_inside_running_after_and_what_exists_frozen(self) -> None:
        gc.enable()
        with collector_paused():
            assert not gc.isenabled()
            built = [{"item": i} for i in range(1000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(built)

    def test_a_collector_paused_before_stays_paused(self) -> None:
        gc.disable()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
