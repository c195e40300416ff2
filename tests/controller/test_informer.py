"""Informers: the shared cache's rules, and the asyncio informer over the in-memory store."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from gridweave_controller._watch_flow import WatchEvent
from gridweave_controller.errors import TransportError
from gridweave_controller.informer import AsyncInformer, InformerCache, Notification
from gridweave_controller.models import Job
from gridweave_controller.store import JOBS, AsyncRawWatch, RawList
from gridweave_controller.watch import watch_jobs_async
from tests.contract.watch_transports import job_body
from tests.support.memory_store import AsyncMemoryStore, MemoryStore

NAMESPACE = "gridweave"


def job(name: str, version: int) -> Job:
    """A typed job at a resourceVersion."""
    return Job.from_raw({"metadata": {"name": name, "resourceVersion": str(version)}})


class TestInformerCache:
    def test_events_become_handler_calls(self) -> None:
        cache: InformerCache[Job] = InformerCache()
        first, second = job("a", 1), job("a", 2)
        assert cache.apply(WatchEvent("ADDED", first, "1")) == Notification("add", None, first)
        assert not cache.synced
        assert cache.apply(WatchEvent("BOOKMARK", None, "1")) is None
        assert cache.synced
        assert cache.apply(WatchEvent("MODIFIED", second, "2")) == Notification(
            "update", first, second
        )
        gone = job("a", 3)
        assert cache.apply(WatchEvent("DELETED", gone, "3")) == Notification("delete", second, None)
        assert cache.objects() == [] and cache.resource_version == "3"

    def test_resync_hands_every_object_to_update_as_itself(self) -> None:
        cache: InformerCache[Job] = InformerCache()
        for index in range(3):
            cache.apply(WatchEvent("ADDED", job(f"j{index}", index), str(index)))
        notes = cache.resync()
        assert [(n.kind, n.arguments()) for n in notes] == [
            ("update", (obj, obj)) for obj in cache.objects()
        ]


class FailingOnce:
    """An asyncio watch source whose first watch is refused for good (a 401)."""

    def __init__(self, store: AsyncMemoryStore) -> None:
        self.store = store
        self.refused = 0

    async def list_page(self, *args: Any, **kwargs: Any) -> RawList:
        return await self.store.list_page(*args, **kwargs)

    async def watch(self, *args: Any, **kwargs: Any) -> AsyncRawWatch:
        if not self.refused:
            self.refused += 1
            raise TransportError("refused", status={"code": 401})
        return await self.store.watch(*args, **kwargs)


class TestAsyncInformer:
    def test_starts_over_after_an_error_handing_out_only_differences(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        memory = MemoryStore()
        memory.create(NAMESPACE, JOBS, job_body("early"))
        source = FailingOnce(AsyncMemoryStore(memory))
        calls: list[tuple[str, str]] = []

        async def run() -> list[str]:
            informer = AsyncInformer(
                lambda known: watch_jobs_async(source, NAMESPACE, known=known),
                on_add=lambda obj: calls.append(("add", obj.name)),
                on_update=lambda old, new: calls.append(("update", new.name)),
                on_delete=lambda obj: calls.append(("delete", obj.name)),
            )
            async with informer:
                assert await informer.wait_until_synced(10)
                async with asyncio.timeout(10):
                    while not source.refused:
                        await asyncio.sleep(0.01)
                memory.create(NAMESPACE, JOBS, job_body("late"))
                memory.delete(NAMESPACE, JOBS, "early")
                async with asyncio.timeout(10):
                    while len(calls) < 3:
                        await asyncio.sleep(0.01)
                await asyncio.sleep(0.1)  # anything repeated would arrive by now
                return [obj.name for obj in informer.list()]

        with caplog.at_level(logging.ERROR, "gridweave_controller.informer"):
            names = asyncio.run(run())
        assert calls == [("add", "early"), ("add", "late"), ("delete", "early")]
        assert names == ["late"]
        assert "starting over" in caplog.text

    def test_a_failing_handler_is_logged_and_async_handlers_are_awaited(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        memory = MemoryStore()
        memory.create(NAMESPACE, JOBS, job_body("one"))
        memory.create(NAMESPACE, JOBS, job_body("two"))
        awaited: list[str] = []

        def broken(obj: Job) -> None:
            raise RuntimeError(f"cannot handle {obj.name}")

        async def slow(obj: Job) -> None:
            await asyncio.sleep(0)
            awaited.append(obj.name)

        async def run() -> None:
            store = AsyncMemoryStore(memory)
            informer = AsyncInformer(lambda known: watch_jobs_async(store, NAMESPACE, known=known))
            informer.add_handlers(on_add=broken)
            informer.add_handlers(on_add=slow)
            async with informer:
                assert await informer.wait_until_synced(10)

        with caplog.at_level(logging.ERROR, "gridweave_controller.informer"):
            asyncio.run(run())
        assert awaited == ["one", "two"]
        failures = [r for r in caplog.records if r.exc_info and "failed" in r.getMessage()]
        assert [str(r.exc_info[1]) for r in failures if r.exc_info] == [
            "cannot handle one",
            "cannot handle two",
        ]
