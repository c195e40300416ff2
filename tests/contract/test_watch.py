"""Typed watches and informers, the same on every transport: nothing lost, nothing repeated.

Runs on the in-memory store, the real apiserver, and kuberay-service in front of each
(``watch_transports.py``). Compaction runs against an apiserver whose watches go to etcd
(``tests/support/compacting_kubeapi.py``): there an etcd compaction really makes a watch
from an older resourceVersion answer 410.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from gridweave_clients.kuberay_watch import ProxiedWatchSource
from gridweave_controller.errors import Expired, Invalid, TransportError
from gridweave_controller.informer import AsyncInformer, Informer
from gridweave_controller.models import Job
from gridweave_controller.store import ENDPOINTS, JOBS
from gridweave_controller.watch import (
    watch_endpoints,
    watch_jobs,
    watch_jobs_async,
)
from tests.contract.watch_transports import (
    PROXIED_WATCH_TRANSPORTS,
    WATCH_TRANSPORTS,
    Collector,
    WatchTransport,
    Writer,
    changes,
    collect_async,
    open_watch_transport,
)
from tests.support.compacting_kubeapi import CompactingKubeAPI, compacting_kube_api
from tests.support.kubeapi import KubeAPIUnavailable
from tests.support.unavailable import entered_or_skip


@pytest.fixture(params=WATCH_TRANSPORTS)
def watched(request: pytest.FixtureRequest) -> Iterator[WatchTransport]:
    """Each transport in turn, on a namespace of its own (the session apiserver for real)."""
    name: str = request.param
    api = None if name.endswith("mock") else request.getfixturevalue("kubeapi")
    with open_watch_transport(name, api) as transport:
        yield transport


@pytest.fixture(params=PROXIED_WATCH_TRANSPORTS)
def proxied(request: pytest.FixtureRequest) -> Iterator[WatchTransport]:
    """The transports with kuberay-service in front, on a namespace of their own."""
    name: str = request.param
    api = None if name.endswith("mock") else request.getfixturevalue("kubeapi")
    with open_watch_transport(name, api) as transport:
        assert transport.kuberay is not None
        yield transport


@pytest.fixture(scope="module")
def compacting_api() -> Iterator[CompactingKubeAPI]:
    """An apiserver whose watches answer 410 once etcd compacted their resourceVersion."""
    with entered_or_skip("Kubernetes API server", compacting_kube_api(), KubeAPIUnavailable) as api:
        yield api


@pytest.fixture(params=WATCH_TRANSPORTS)
def compacting(request: pytest.FixtureRequest) -> Iterator[WatchTransport]:
    """Each transport in turn, the real ones over :func:`compacting_api`."""
    name: str = request.param
    if name.endswith("mock"):
        with open_watch_transport(name) as transport:
            yield transport
        return
    cluster: CompactingKubeAPI = request.getfixturevalue("compacting_api")
    with open_watch_transport(name, cluster.api, cluster.etcd_url) as transport:
        yield transport


def _names(transport: WatchTransport, plural: str = JOBS) -> dict[str, str]:
    page = transport.store.list_page(transport.namespace, plural)
    return {obj["metadata"]["name"]: obj["metadata"]["resourceVersion"] for obj in page.items}


class TestOrder:
    def test_every_change_is_handed_out_once_and_in_order(self, watched: WatchTransport) -> None:
        writer = Writer(watched.store, watched.namespace)
        writer.create("before-1")
        writer.create("before-2")
        collector = Collector(watch_jobs(watched.source, watched.namespace))
        try:
            listed = collector.wait_synced()
            assert sorted(listed) == sorted(writer.written)
            first_bookmark = next(e for e in collector.events if e.type == "BOOKMARK")
            assert collector.events.index(first_bookmark) == 2  # the end of the first list
            writer.written.clear()
            for name in ("job-a", "job-b", "job-c"):
                writer.create(name)
            for step in range(5):
                for name in ("job-a", "job-b", "job-c", "before-1"):
                    writer.change(name, f"step {step}")
            writer.delete("job-b")
            writer.delete("before-2")
            writer.change("job-a", "after the deletes")
            seen = collector.wait_for(2 + len(writer.written))[2:]
        finally:
            collector.stop()
        assert seen == writer.written
        versions = [int(v) for _, _, v in seen if v is not None]
        assert versions == sorted(versions)

    def test_asyncio_watch_hands_out_the_same(self, watched: WatchTransport) -> None:
        writer = Writer(watched.store, watched.namespace)
        writer.create("early")

        async def watch_while_writing() -> list[Any]:
            async with watched.async_source() as source:
                watch = watch_jobs_async(source, watched.namespace)
                thread = threading.Thread(target=write_later)
                synced = asyncio.Event()
                pending = asyncio.create_task(collect_async(watch, 1 + 1 + 4 * 3 + 1, synced))
                await synced.wait()
                thread.start()
                events = await pending
                thread.join()
                return events

        def write_later() -> None:
            writer.create("late")
            for step in range(3):
                for name in ("early", "late"):
                    writer.change(name, f"step {step}")
                    writer.change(name, f"step {step} again")
            writer.delete("late")

        events = asyncio.run(watch_while_writing())
        assert changes(events) == writer.written
        assert isinstance(events[0].object, Job)

    def test_endpoints_have_a_watch_of_their_own(self, watched: WatchTransport) -> None:
        jobs = Writer(watched.store, watched.namespace)
        endpoints = Writer(watched.store, watched.namespace, ENDPOINTS)
        collector = Collector(watch_endpoints(watched.source, watched.namespace))
        try:
            collector.wait_synced()
            jobs.create("job-x")
            endpoints.create("ep-1")
            endpoints.change("ep-1", "deploying")
            jobs.change("job-x", "busy")
            endpoints.delete("ep-1")
            seen = collector.wait_for(len(endpoints.written))
        finally:
            collector.stop()
        assert seen == endpoints.written

    def test_a_label_selector_filters_the_changes(self, watched: WatchTransport) -> None:
        writer = Writer(watched.store, watched.namespace)
        bobs = Writer(watched.store, watched.namespace)
        watch = watch_jobs(
            watched.source, watched.namespace, label_selector="gridweave.io/user=bob"
        )
        collector = Collector(watch)
        try:
            collector.wait_synced()
            writer.create("alices", user="alice")
            bobs.create("bobs", user="bob")
            writer.change("alices", "one")
            bobs.change("bobs", "two")
            seen = collector.wait_for(len(bobs.written))
        finally:
            collector.stop()
        assert seen == bobs.written

    def test_from_a_resource_version_only_later_changes(self, watched: WatchTransport) -> None:
        writer = Writer(watched.store, watched.namespace)
        writer.create("old")
        page = watched.store.list_page(watched.namespace, JOBS)
        writer.written.clear()
        writer.change("old", "after the list")
        writer.create("new")
        known = [Job.from_raw(item) for item in page.items]
        watch = watch_jobs(
            watched.source,
            watched.namespace,
            resource_version=page.resource_version,
            known=known,
        )
        collector = Collector(watch)
        try:
            seen = collector.wait_for(len(writer.written))
        finally:
            collector.stop()
        assert seen == writer.written

    def test_a_bad_selector_is_invalid_before_any_event(self, watched: WatchTransport) -> None:
        with (
            pytest.raises(Invalid),
            watch_jobs(watched.source, watched.namespace, label_selector="user in (") as watch,
        ):
            next(watch)


class TestCompaction:
    def test_a_compacted_resource_version_answers_410(self, compacting: WatchTransport) -> None:
        writer = Writer(compacting.store, compacting.namespace)
        writer.create("one")
        page = compacting.store.list_page(compacting.namespace, JOBS)
        writer.change("one", "moved on")
        writer.change("one", "and on")  # etcd keeps the compaction's own revision
        compacting.compact()
        stream = compacting.source.watch(
            compacting.namespace, JOBS, resource_version=page.resource_version
        )
        try:
            with pytest.raises(Expired) as raised:
                next(stream)
        finally:
            stream.close()
        assert raised.value.status.get("code") == 410

    def test_a_watch_across_a_compaction_loses_nothing(self, compacting: WatchTransport) -> None:
        writer = Writer(compacting.store, compacting.namespace)
        for name in ("kept", "changed", "deleted"):
            writer.create(name)
        page = compacting.store.list_page(compacting.namespace, JOBS)
        known = [Job.from_raw(item) for item in page.items]
        changed = writer.change("changed", "while nobody watched")
        writer.change("changed", "twice")
        writer.delete("deleted")
        added = writer.create("added")
        compacting.compact()  # the watch from the list's version can only answer 410 now
        watch = watch_jobs(
            compacting.source,
            compacting.namespace,
            resource_version=page.resource_version,
            known=known,
        )
        collector = Collector(watch)
        try:
            caught_up = collector.wait_for(3)
            assert changed not in {v for _, _, v in caught_up}  # only the latest state
            later = writer.create("later")
            writer.change("kept", "after the relist")
            seen = collector.wait_for(5)
        finally:
            collector.stop()
        latest = _names(compacting)
        assert sorted(seen[:3], key=str) == sorted(
            [
                ("MODIFIED", "changed", latest["changed"]),
                ("ADDED", "added", added),
                ("DELETED", "deleted", None),
            ],
            key=str,
        )
        assert seen[3:] == [("ADDED", "later", later), ("MODIFIED", "kept", latest["kept"])]
        deleted = next(e for e in collector.events if e.type == "DELETED")
        assert deleted.object is not None and deleted.object.raw == next(
            item for item in page.items if item["metadata"]["name"] == "deleted"
        )
        bookmark = collector.events[3]
        assert bookmark.type == "BOOKMARK" and int(bookmark.resource_version) >= int(added)


class TestRestart:
    def test_a_watch_outlives_a_kuberay_restart(self, proxied: WatchTransport) -> None:
        watched = proxied
        assert watched.kuberay is not None
        writer = Writer(watched.store, watched.namespace)
        collector = Collector(watch_jobs(watched.source, watched.namespace))
        try:
            collector.wait_synced()
            writer.create("steady")
            writer.change("steady", "before")
            collector.wait_for(2)
            watched.kuberay.kill()
            writer.change("steady", "while kuberay-service was down")
            writer.create("born-while-down")
            watched.kuberay.start()
            writer.change("born-while-down", "after the restart")
            writer.delete("steady")
            seen = collector.wait_for(len(writer.written))
        finally:
            collector.stop()
        assert seen == writer.written

    def test_a_refused_token_is_not_retried(self, proxied: WatchTransport) -> None:
        watched = proxied
        assert watched.kuberay is not None
        source = ProxiedWatchSource(watched.kuberay.url, "not-the-token")
        try:
            with (
                pytest.raises(TransportError) as raised,
                watch_jobs(source, watched.namespace) as watch,
            ):
                next(watch)
        finally:
            source.close()
        assert raised.value.status.get("code") == 401


class TestInformer:
    def test_the_cache_equals_a_fresh_list_after_a_burst(self, watched: WatchTransport) -> None:
        writer = Writer(watched.store, watched.namespace)
        for index in range(5):
            writer.create(f"old-{index}")
        handled: list[tuple[str, str]] = []

        def burst() -> None:
            for index in range(20):
                writer.create(f"burst-{index}")
            for step in range(3):
                for index in range(0, 20, 2):
                    writer.change(f"burst-{index}", f"step {step}")
            for index in range(0, 20, 5):
                writer.delete(f"burst-{index}")
            writer.delete("old-0")
            writer.change("old-1", "last")

        async def run() -> dict[str, str]:
            async with watched.async_source() as source:
                informer = AsyncInformer(
                    lambda known: watch_jobs_async(source, watched.namespace, known=known),
                    on_add=lambda job: handled.append(("add", job.name)),
                    on_update=lambda old, new: handled.append(("update", new.name)),
                    on_delete=lambda job: handled.append(("delete", job.name)),
                )
                async with informer:
                    assert await informer.wait_until_synced(30)
                    assert len(informer.list()) == 5
                    await asyncio.to_thread(burst)
                    target = len(writer.written)
                    async with asyncio.timeout(60):
                        while len(handled) < target:
                            await asyncio.sleep(0.01)
                    return {job.name: job.metadata.resource_version for job in informer.list()}

        cached = asyncio.run(run())
        assert cached == _names(watched)
        assert [kind for kind, _ in handled].count("add") == 25
        assert [kind for kind, _ in handled].count("delete") == 5
        assert len(handled) == len(writer.written)

    def test_resync_hands_the_cache_out_again(self, watched: WatchTransport) -> None:
        writer = Writer(watched.store, watched.namespace)
        writer.create("a")
        writer.create("b")
        resynced: list[tuple[str, str]] = []
        synced = threading.Event()

        def on_update(old: Job, new: Job) -> None:
            if old is new:
                resynced.append((new.name, new.metadata.resource_version))
                if len(resynced) >= 4:
                    synced.set()

        informer = Informer(
            lambda known: watch_jobs(watched.source, watched.namespace, known=known),
            on_update=on_update,
            resync_seconds=0.2,
        )
        with informer:
            assert informer.wait_until_synced(30)
            assert synced.wait(30)
        assert {name for name, _ in resynced} == {"a", "b"}
        assert dict(resynced) == _names(watched)

    def test_threaded_informer_follows_changes_and_stops(self, watched: WatchTransport) -> None:
        writer = Writer(watched.store, watched.namespace)
        deleted = threading.Event()
        informer = Informer(
            lambda known: watch_jobs(watched.source, watched.namespace, known=known),
            on_delete=lambda job: deleted.set(),
        )
        with informer:
            assert informer.wait_until_synced(30)
            writer.create("short-lived")
            writer.change("short-lived", "ran")
            writer.delete("short-lived")
            assert deleted.wait(30)
            assert informer.get("short-lived") is None
        assert not any(
            t.name.startswith("informer") and t.is_alive() for t in threading.enumerate()
        )
