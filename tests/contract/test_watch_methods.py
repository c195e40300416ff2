"""``watch_jobs`` / ``watch_endpoints`` as functions of every transport module.

``crd``, ``tests.mock_crd`` and ``job_gateway.crd_client`` all hand out the same typed
watch; the transport fixture runs each test on the in-memory store, the real apiserver and
kuberay-service in front of each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from gridweave_controller import JobPhase
from gridweave_controller.aio import AsyncCrdClient
from tests.contract.factories import make_endpoint, make_job
from tests.contract.transports import Transport
from tests.support.memory_store import AsyncMemoryStore, MemoryStore


def _changes(events: Iterator[Any], count: int) -> list[tuple[str, str, str]]:
    """The next ``count`` events that are not bookmarks: (type, name, phase)."""
    seen = []
    for event in events:
        if event.type == "BOOKMARK":
            continue
        seen.append((event.type, event.object.name, event.object.phase.value))
        if len(seen) == count:
            return seen
    raise AssertionError(f"the watch ended after {seen}")


class TestWatchFunctions:
    def test_a_users_jobs_are_followed_in_order(self, transport: Transport) -> None:
        api = transport.api
        mine = make_job(transport, user_id="watcher@example.com")
        make_job(transport, user_id="someone-else")
        with api.watch_jobs(user_id="watcher@example.com", timeout_seconds=30) as watch:
            events = iter(watch)
            assert _changes(events, 1) == [("ADDED", mine.name, "Pending")]
            api.set_job_allocated(mine.name, "gpu-1", [0])
            make_job(transport, user_id="someone-else")  # not this user's: never seen
            api.set_job_running(mine.name)
            api.delete_job(mine.name)
            assert _changes(events, 3) == [
                ("MODIFIED", mine.name, JobPhase.ALLOCATED.value),
                ("MODIFIED", mine.name, JobPhase.RUNNING.value),
                ("DELETED", mine.name, JobPhase.RUNNING.value),
            ]

    def test_endpoints_from_a_resource_version_without_a_first_list(
        self, transport: Transport
    ) -> None:
        before = make_endpoint(transport)
        version = before.metadata.resource_version
        with transport.api.watch_endpoints(
            resource_version=version, known=[before], timeout_seconds=30
        ) as watch:
            later = make_endpoint(transport)
            assert _changes(iter(watch), 1) == [("ADDED", later.name, "Pending")]


def test_the_asyncio_client_hands_out_an_async_watch() -> None:
    store = MemoryStore()
    client = AsyncCrdClient(AsyncMemoryStore(store), "gridweave")

    async def follow() -> list[tuple[str, str]]:
        await client.create_job("job-1", "alice", "s3://f", vram_mb=1)
        seen: list[tuple[str, str]] = []
        async with client.watch_jobs(user_id="alice", timeout_seconds=10) as events:
            async for event in events:
                if event.type == "BOOKMARK":
                    continue
                assert event.object is not None
                seen.append((event.type, event.object.name))
                if len(seen) == 1:
                    await client.delete_job("job-1")
                else:
                    break
        return seen

    assert asyncio.run(follow()) == [("ADDED", "job-1"), ("DELETED", "job-1")]
