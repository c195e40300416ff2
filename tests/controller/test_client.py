"""The typed layer over the in-memory store: the read-modify-write loop and its patches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gridweave_controller import Conflict, CrdClient, EndpointPhase, JobPhase
from gridweave_controller.client import MAX_WRITE_ATTEMPTS
from tests.support.memory_store import MemoryStore


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(store: MemoryStore, clock: FakeClock, sleeps: list[float]) -> CrdClient:
    return CrdClient(store, "gridweave", clock=clock, sleep=sleeps.append)


def new_job(client: CrdClient, name: str = "job-1") -> str:
    client.create_job(name, "alice", "s3://f", vram_mb=100)
    return name


class TestReadModifyWrite:
    def test_conflicts_are_retried_with_bounded_jitter(
        self, client: CrdClient, store: MemoryStore, sleeps: list[float]
    ) -> None:
        name = new_job(client)
        store.inject_conflicts(3)
        job = client.set_job_allocated(name, "n1", [0])
        assert job.phase is JobPhase.ALLOCATED
        assert store.calls["get"] == 4 and store.calls["patch_status"] == 4
        assert len(sleeps) == 3
        assert all(0 <= s <= 0.5 for s in sleeps)

    def test_gives_up_with_conflict_after_the_last_attempt(
        self, client: CrdClient, store: MemoryStore, sleeps: list[float]
    ) -> None:
        name = new_job(client)
        store.inject_conflicts(MAX_WRITE_ATTEMPTS)
        with pytest.raises(Conflict):
            client.set_job_allocated(name, "n1", [0])
        assert store.calls["patch_status"] == MAX_WRITE_ATTEMPTS
        assert len(sleeps) == MAX_WRITE_ATTEMPTS - 1
        assert client.get_job(name).phase is JobPhase.PENDING

    def test_retry_recomputes_from_the_new_read(
        self, client: CrdClient, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Someone else requeues between our read and our write: we count on top of it."""
        name = new_job(client)
        client.set_job_allocated(name, "n1", [0])
        other = CrdClient(store, "gridweave")
        original_get = store.get
        interfered = False

        def get_then_interfere(*args: Any) -> dict[str, Any]:
            nonlocal interfered
            result = original_get(*args)
            if not interfered:
                interfered = True
                other.set_job_pending(name, "NodeLost")
                other.set_job_allocated(name, "n2", [1])
            return result

        monkeypatch.setattr(store, "get", get_then_interfere)
        job = client.set_job_pending(name, "ExecutorLost")
        assert job.status.attempts == 2
        assert job.status.reason == "ExecutorLost"

    def test_patch_carries_resource_version_and_every_condition(
        self, client: CrdClient, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        name = new_job(client)
        client.set_job_allocated(name, "n1", [0])
        before = store.get("gridweave", "gridweavejobs", name)
        patches: list[dict[str, Any]] = []
        original = store.patch_status

        def spy(namespace: str, plural: str, obj: str, patch: dict[str, Any]) -> dict[str, Any]:
            patches.append(patch)
            return original(namespace, plural, obj, patch)

        monkeypatch.setattr(store, "patch_status", spy)
        client.set_job_running(name)
        [patch] = patches
        assert patch["metadata"] == {"resourceVersion": before["metadata"]["resourceVersion"]}
        assert [c["type"] for c in patch["status"]["conditions"]] == ["Allocated", "Running"]
        assert patch["status"]["phase"] == "Running"
        assert "node" not in patch["status"]  # unchanged fields are not resent


class TestTimestampsAndBilling:
    def test_job_stamps_and_bills(self, client: CrdClient, clock: FakeClock) -> None:
        name = new_job(client)
        allocated = client.set_job_allocated(name, "n1", [0])
        assert allocated.raw["status"]["allocatedAt"] == "2026-03-04T05:06:07.000000Z"
        clock.advance(2)
        running = client.set_job_running(name)
        assert running.raw["status"]["startedAt"] == "2026-03-04T05:06:09.000000Z"
        clock.advance(30)
        done = client.set_job_completed(name, 30.000001)
        assert done.raw["status"]["finishedAt"] == "2026-03-04T05:06:39.000000Z"
        assert done.status.billed_seconds == 31
        condition = done.status.condition("Allocated")
        assert condition is not None
        assert condition.last_transition_time == datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)

    def test_exact_whole_seconds_are_not_rounded_up(self, client: CrdClient) -> None:
        name = new_job(client)
        client.set_job_allocated(name, "n1", [0])
        client.set_job_running(name)
        assert client.set_job_completed(name, 30.0).status.billed_seconds == 30

    def test_endpoint_bills_each_running_stretch(self, client: CrdClient, clock: FakeClock) -> None:
        client.create_endpoint("ep-1", "alice", vram_mb=10, model="m")
        client.set_endpoint_deploying("ep-1", "n1", [0])
        clock.advance(100)  # deploying time is not billed
        client.set_endpoint_running("ep-1", "http://n1:1")
        clock.advance(10.5)
        first = client.set_endpoint_stopped("ep-1", "UserStopped")
        assert first.status.billed_seconds == 11
        client.set_endpoint_deploying("ep-1", "n1", [0])
        client.set_endpoint_running("ep-1", "http://n1:1")
        clock.advance(5)
        second = client.set_endpoint_failed("ep-1", "Crashed", "segfault")
        assert second.phase is EndpointPhase.FAILED
        assert second.status.billed_seconds == 16

    def test_a_redeploy_from_running_bills_the_finished_run(
        self, client: CrdClient, clock: FakeClock
    ) -> None:
        client.create_endpoint("ep-1", "alice", vram_mb=10, model="m")
        client.set_endpoint_deploying("ep-1", "n1", [0])
        client.set_endpoint_running("ep-1", "http://n1:1")
        clock.advance(1000)
        redeployed = client.set_endpoint_deploying("ep-1", "n2", [1])
        assert redeployed.status.billed_seconds == 1000
        clock.advance(30)  # deploying again: not billed
        client.set_endpoint_running("ep-1", "http://n2:1")
        clock.advance(5)
        stopped = client.set_endpoint_stopped("ep-1", "UserStopped")
        assert stopped.status.billed_seconds == 1005

    def test_health_transition_time_moves_only_on_a_flip(
        self, client: CrdClient, clock: FakeClock
    ) -> None:
        client.create_endpoint("ep-1", "alice", vram_mb=10, image=f"a/img@sha256:{'0' * 64}")
        client.set_endpoint_deploying("ep-1", "n1", [0])
        client.set_endpoint_running("ep-1", "http://n1:1")
        first = client.set_endpoint_health("ep-1", True, "ok")
        clock.advance(60)
        same = client.set_endpoint_health("ep-1", True, "still ok")
        clock.advance(60)
        flipped = client.set_endpoint_health("ep-1", False, "503")

        def moved(endpoint: Any) -> datetime:
            return endpoint.status.condition("Healthy").last_transition_time  # type: ignore[no-any-return]

        assert moved(first) == moved(same)
        assert moved(flipped) == moved(first) + timedelta(seconds=120)


def test_wait_for_job_polls_with_growing_pauses(
    client: CrdClient, store: MemoryStore, sleeps: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    name = new_job(client)
    original_get = store.get
    reads = 0

    def get_and_progress(*args: Any) -> dict[str, Any]:
        nonlocal reads
        reads += 1
        if reads == 4:
            CrdClient(store, "gridweave").set_job_cancelled(name, "user asked")
        return original_get(*args)

    monkeypatch.setattr(store, "get", get_and_progress)
    job = client.wait_for_job(name, [JobPhase.CANCELLED], timeout=30)
    assert job.phase is JobPhase.CANCELLED
    assert sleeps == sorted(sleeps) and len(sleeps) >= 3
