"""The typed watch's sans-IO flow: its steps and events, driven by hand (no store, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from gridweave_controller._raw_watch import RawList
from gridweave_controller._watch_flow import (
    Backoff,
    ListObjects,
    OpenWatch,
    ReadEvent,
    WatchEvent,
    WatchState,
    backoff_seconds,
    retriable,
    watch_flow,
)
from gridweave_controller.errors import (
    Conflict,
    Expired,
    Invalid,
    NotFound,
    TransportError,
)
from gridweave_controller.models import Job


def raw(name: str, version: int, phase: str = "Pending") -> dict[str, Any]:
    """A raw job at a resourceVersion."""
    return {
        "metadata": {"name": name, "resourceVersion": str(version)},
        "spec": {"userId": "u", "functionRef": "s3://f", "vramMb": 1},
        "status": {"phase": phase},
    }


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """A raw watch event."""
    return {"type": kind, "object": obj}


def summary(events: list[WatchEvent[Job]]) -> list[tuple[str, str | None, str]]:
    """(type, name, version) of each event."""
    return [(e.type, e.object.name if e.object else None, e.resource_version) for e in events]


class Driver:
    """Runs a flow by hand: answers its steps from scripted replies, collects its events."""

    def __init__(self, state: WatchState[Job], *, listed: bool, deadline: float | None = None):
        self.clock = 0.0
        self.flow = watch_flow(state, listed=listed, deadline=deadline, clock=lambda: self.clock)
        self.step: Any = next(self.flow)
        self.events: list[WatchEvent[Job]] = []

    def _collect(self, step: Any) -> Any:
        while isinstance(step, WatchEvent):
            self.events.append(step)
            step = self.flow.send(None)
        self.step = step
        return step

    def reply(self, value: Any) -> Any:
        """Send the current step's result; the next step (events collected on the way)."""
        return self._collect(self.flow.send(value))

    def fail(self, error: Exception) -> Any:
        """Throw the current step's error into the flow; the next step."""
        return self._collect(self.flow.throw(error))


class TestRelist:
    def test_first_list_hands_out_every_object_then_a_bookmark(self) -> None:
        state = WatchState(Job.from_raw)
        events = state.relist(RawList([raw("a", 3), raw("b", 4)], "7"))
        assert summary(events) == [
            ("ADDED", "a", "3"),
            ("ADDED", "b", "4"),
            ("BOOKMARK", None, "7"),
        ]
        assert state.resource_version == "7"

    def test_a_relist_hands_out_only_the_differences(self) -> None:
        state = WatchState(Job.from_raw, [raw("same", 1), raw("moved", 2), raw("gone", 3)], "5")
        page = RawList([raw("same", 1), raw("moved", 9, "Allocated"), raw("new", 8)], "10")
        events = state.relist(page)
        assert summary(events) == [
            ("MODIFIED", "moved", "9"),
            ("ADDED", "new", "8"),
            ("DELETED", "gone", "3"),
            ("BOOKMARK", None, "10"),
        ]
        deleted = events[2].object
        assert deleted is not None and deleted.raw == raw("gone", 3)
        assert set(state.known) == {"same", "moved", "new"}


class TestApply:
    def test_an_event_already_given_is_dropped(self) -> None:
        state = WatchState(Job.from_raw, [raw("a", 4)], "4")
        assert state.apply(event("MODIFIED", raw("a", 4))) is None
        assert state.resource_version == "4"

    def test_types_follow_what_the_caller_was_given(self) -> None:
        state = WatchState(Job.from_raw, [raw("a", 1)], "1")
        added_known = state.apply(event("ADDED", raw("a", 2)))
        modified_unknown = state.apply(event("MODIFIED", raw("b", 3)))
        assert added_known is not None and added_known.type == "MODIFIED"
        assert modified_unknown is not None and modified_unknown.type == "ADDED"

    def test_delete_forgets_and_bookmark_moves_the_version(self) -> None:
        state = WatchState(Job.from_raw, [raw("a", 1)], "1")
        deleted = state.apply(event("DELETED", raw("a", 5)))
        bookmark = state.apply(
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}
        )
        assert deleted is not None and deleted.type == "DELETED" and deleted.resource_version == "5"
        assert bookmark == WatchEvent("BOOKMARK", None, "9")
        assert state.known == {} and state.resource_version == "9"


class TestFlow:
    def test_lists_then_watches_from_the_lists_version(self) -> None:
        driver = Driver(WatchState(Job.from_raw), listed=False)
        assert driver.step == ListObjects()
        step = driver.reply(RawList([raw("a", 2)], "5"))
        assert step == OpenWatch("5", 290)
        assert driver.reply(None) == ReadEvent()
        assert driver.reply(event("MODIFIED", raw("a", 6))) == ReadEvent()
        assert summary(driver.events) == [
            ("ADDED", "a", "2"),
            ("BOOKMARK", None, "5"),
            ("MODIFIED", "a", "6"),
        ]

    def test_a_stream_that_ends_is_opened_again_from_the_last_version(self) -> None:
        driver = Driver(WatchState(Job.from_raw, [], "3"), listed=True)
        assert driver.step == OpenWatch("3", 290)
        driver.reply(None)
        driver.reply(event("ADDED", raw("a", 7)))
        assert driver.reply(None) == OpenWatch("7", 290)

    def test_expired_lists_again_and_hands_out_only_the_differences(self) -> None:
        driver = Driver(WatchState(Job.from_raw, [raw("a", 1), raw("b", 2)], "2"), listed=True)
        driver.reply(None)
        assert driver.fail(Expired("too old resource version")) == ListObjects()
        step = driver.reply(RawList([raw("a", 1), raw("c", 9)], "12"))
        assert step == OpenWatch("12", 290)
        assert summary(driver.events) == [
            ("ADDED", "c", "9"),
            ("DELETED", "b", "2"),
            ("BOOKMARK", None, "12"),
        ]

    def test_a_second_expiry_in_a_row_backs_off_before_listing(self) -> None:
        driver = Driver(WatchState(Job.from_raw, [], "2"), listed=True)
        driver.fail(Expired("gone"))
        driver.reply(RawList([], "4"))
        assert isinstance(driver.fail(Expired("gone again")), Backoff)
        assert driver.reply(None) == ListObjects()

    @pytest.mark.parametrize(
        "error",
        [
            TransportError("connection refused"),
            TransportError("bad gateway", status={"code": 502}),
            TransportError("unavailable", status={"code": 503}),
            TransportError("slow down", status={"code": 429}),
        ],
    )
    def test_failures_a_retry_can_fix_back_off_and_reopen(self, error: TransportError) -> None:
        driver = Driver(WatchState(Job.from_raw, [], "3"), listed=True)
        first = driver.fail(error)
        assert isinstance(first, Backoff) and 0 < first.seconds <= 0.05
        assert driver.reply(None) == OpenWatch("3", 290)
        second = driver.fail(error)
        assert isinstance(second, Backoff) and second.seconds <= 0.1

    @pytest.mark.parametrize(
        "error",
        [
            Invalid("bad selector"),
            NotFound("no such resource"),
            Conflict("odd"),
            TransportError("forbidden", status={"code": 403}),
        ],
    )
    def test_other_errors_end_the_watch(self, error: Exception) -> None:
        driver = Driver(WatchState(Job.from_raw, [], "3"), listed=True)
        with pytest.raises(type(error)):
            driver.fail(error)

    def test_a_server_error_on_the_watch_backs_off_and_lists_again(self) -> None:
        driver = Driver(WatchState(Job.from_raw, [], "3"), listed=True)
        assert isinstance(driver.fail(TransportError("etcd", status={"code": 500})), Backoff)
        assert driver.reply(None) == ListObjects()

    def test_the_deadline_ends_the_watch_at_the_end_of_a_stream(self) -> None:
        driver = Driver(WatchState(Job.from_raw, [], "3"), listed=True, deadline=10.0)
        assert driver.step == OpenWatch("3", 10)
        driver.reply(None)
        driver.clock = 10.5
        with pytest.raises(StopIteration):
            driver.reply(None)


def test_backoff_is_jittered_and_capped() -> None:
    assert all(0.025 <= backoff_seconds(1) <= 0.05 for _ in range(50))
    assert all(1.0 <= backoff_seconds(30) <= 2.0 for _ in range(50))
    assert retriable(TransportError("reset"))
    assert not retriable(Expired("gone"))
