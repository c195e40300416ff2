"""The four transports of the watch contract tests, and what the tests drive them with.

``mock``: the in-memory store itself; ``real``: the official client's stores on a real
apiserver; ``proxied-mock`` / ``proxied-real``: ``gridweave_clients.kuberay_watch`` over HTTP to
kuberay-service in front of the same two (over the in-memory store in a thread of this
process, over the cluster as its own process, each killable). Writes go straight to the
store behind, so what a watch hands out can be compared with what was written.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from gridweave_clients.kuberay_watch import AsyncProxiedWatchSource, ProxiedWatchSource
from gridweave_controller import aio
from gridweave_controller._kube_store import KubeStore
from gridweave_controller.store import JOBS, AsyncRawWatchSource, RawStore, RawWatchSource
from gridweave_controller.watch import AsyncWatch, Watch, WatchEvent
from tests.support.compacting_kubeapi import compact_etcd
from tests.support.killable_kuberay import KubeRayProcess, KubeRayThread
from tests.support.kubeapi import KubeAPI, api_client_for, namespace_for_test
from tests.support.kuberay_fixtures import TOKEN, kuberay_app
from tests.support.memory_store import AsyncMemoryStore, MemoryStore

WATCH_TRANSPORTS = [
    pytest.param("mock", id="mock"),
    pytest.param("real", id="real", marks=pytest.mark.kubeapi),
    pytest.param("proxied-mock", id="proxied-mock"),
    pytest.param("proxied-real", id="proxied-real", marks=pytest.mark.kubeapi),
]
#: The transports with kuberay-service in front (restart and auth tests).
PROXIED_WATCH_TRANSPORTS = [p for p in WATCH_TRANSPORTS if str(p.id).startswith("proxied")]
#: How long a test waits for a change to reach a watch before it fails.
DELIVERY_TIMEOUT_S = 60.0
USER_LABEL = "gridweave.io/user"


@dataclass
class WatchTransport:
    """One transport: the store to write through and the sources a watch reads from."""

    name: str
    namespace: str
    store: RawStore
    source: RawWatchSource
    async_source: Callable[[], AbstractAsyncContextManager[AsyncRawWatchSource]]
    #: Compact the history behind the store up to now (etcd's, or the in-memory log).
    compact: Callable[[], None]
    #: kuberay-service, for the proxied transports.
    kuberay: KubeRayThread | KubeRayProcess | None = None


@asynccontextmanager
async def _memory_async(store: MemoryStore) -> AsyncIterator[AsyncRawWatchSource]:
    yield AsyncMemoryStore(store)


@asynccontextmanager
async def _kube_async(api: KubeAPI, namespace: str) -> AsyncIterator[AsyncRawWatchSource]:
    client = await aio.connect(kubeconfig=api.kubeconfig, namespace=namespace)
    try:
        yield client.store
    finally:
        await client.close()
        # aiohttp's documented graceful shutdown: a closed TLS connection needs a moment on
        # the loop to finish (close_notify); without it, asyncio.run ending at once leaves
        # the socket transport to the garbage collector (a ResourceWarning in a later test).
        await asyncio.sleep(0.25)


@asynccontextmanager
async def _proxied_async(url: str) -> AsyncIterator[AsyncRawWatchSource]:
    source = AsyncProxiedWatchSource(url, TOKEN)
    try:
        yield source
    finally:
        await source.aclose()


def _compact_memory(store: MemoryStore) -> None:
    store.compact(store.log.version)


@contextmanager
def open_watch_transport(
    name: str, api: KubeAPI | None = None, etcd_url: str | None = None
) -> Iterator[WatchTransport]:
    """The transport ``name`` on a fresh namespace (``api`` for the real ones)."""
    namespace = f"gw-watch-{uuid.uuid4().hex[:10]}"
    with ExitStack() as stack:
        kuberay: KubeRayThread | KubeRayProcess | None = None
        if name.endswith("mock"):
            memory = MemoryStore()
            store: RawStore = memory
            direct: RawWatchSource = memory

            def async_direct() -> AbstractAsyncContextManager[AsyncRawWatchSource]:
                return _memory_async(memory)

            def compact() -> None:
                _compact_memory(memory)

            if name.startswith("proxied-"):
                kuberay = KubeRayThread(lambda: kuberay_app(memory, namespace))
        else:
            assert api is not None
            stack.enter_context(namespace_for_test(api, namespace))
            kube = KubeStore(stack.enter_context(api_client_for(api.kubeconfig)))
            store = direct = kube
            real_api = api

            def async_direct() -> AbstractAsyncContextManager[AsyncRawWatchSource]:
                return _kube_async(real_api, namespace)

            def compact() -> None:
                if etcd_url is None:
                    pytest.skip("this apiserver's watches come from its watch cache")
                compact_etcd(etcd_url)

            if name.startswith("proxied-"):
                kuberay = KubeRayProcess(api.kubeconfig, namespace, TOKEN)
        if kuberay is None:
            yield WatchTransport(name, namespace, store, direct, async_direct, compact)
            return
        stack.enter_context(kuberay)
        proxied = ProxiedWatchSource(kuberay.url, TOKEN)
        stack.callback(proxied.close)
        url = kuberay.url

        def async_proxied() -> AbstractAsyncContextManager[AsyncRawWatchSource]:
            return _proxied_async(url)

        yield WatchTransport(name, namespace, store, proxied, async_proxied, compact, kuberay)


def job_body(name: str, user: str = "alice") -> dict[str, Any]:
    """A raw GridweaveJob to create."""
    return {
        "apiVersion": "gridweave.io/v1",
        "kind": "GridweaveJob",
        "metadata": {"name": name, "labels": {USER_LABEL: user}},
        "spec": {"userId": user, "functionRef": "s3://gridweave/f.pkl", "vramMb": 1024},
    }


def endpoint_body(name: str, user: str = "alice") -> dict[str, Any]:
    """A raw GridweaveEndpoint to create."""
    return {
        "apiVersion": "gridweave.io/v1",
        "kind": "GridweaveEndpoint",
        "metadata": {"name": name, "labels": {USER_LABEL: user}},
        "spec": {"userId": user, "mode": "vllm", "model": "m/m", "vramMb": 1024},
    }


#: (type, name, resourceVersion) of a write, or of an event; a delete's version is unknown.
Change = tuple[str, str, str | None]


@dataclass
class Writer:
    """Writes through the store and records each change as the watch should hand it out."""

    store: RawStore
    namespace: str
    plural: str = JOBS
    written: list[Change] = field(default_factory=list)

    def body(self, name: str, user: str) -> dict[str, Any]:
        """The raw object to create."""
        return job_body(name, user) if self.plural == JOBS else endpoint_body(name, user)

    def create(self, name: str, user: str = "alice") -> str:
        """Create; the new resourceVersion."""
        created = self.store.create(self.namespace, self.plural, self.body(name, user))
        version = str(created["metadata"]["resourceVersion"])
        self.written.append(("ADDED", name, version))
        return version

    def change(self, name: str, message: str) -> str:
        """One status change; the new resourceVersion."""
        patch = {"status": {"message": message}}
        changed = self.store.patch_status(self.namespace, self.plural, name, patch)
        version = str(changed["metadata"]["resourceVersion"])
        self.written.append(("MODIFIED", name, version))
        return version

    def delete(self, name: str) -> None:
        """Delete."""
        self.store.delete(self.namespace, self.plural, name)
        self.written.append(("DELETED", name, None))


def changes(events: list[WatchEvent[Any]]) -> list[Change]:
    """The events that are changes (no bookmarks), as (type, name, version); deletes unversioned."""
    result: list[Change] = []
    for event in events:
        if event.type == "BOOKMARK" or event.object is None:
            continue
        version = None if event.type == "DELETED" else event.resource_version
        result.append((event.type, event.object.name, version))
    return result


class Collector:
    """Runs a blocking typed watch in a thread and keeps what it hands out."""

    def __init__(self, watch: Watch[Any]) -> None:
        self.watch = watch
        self.events: list[WatchEvent[Any]] = []
        self.error: BaseException | None = None
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self.watch:
                with self._changed:
                    self.events.append(event)
                    self._changed.notify_all()
        except BaseException as error:  # handed to the test
            self.error = error
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, count: int, timeout: float = DELIVERY_TIMEOUT_S) -> list[Change]:
        """The changes, once there are ``count`` of them (fails after ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(changes(self.events)) < count and self.error is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(remaining)
            if self.error is not None:
                raise self.error
            return changes(self.events)

    def wait_synced(self, timeout: float = DELIVERY_TIMEOUT_S) -> list[Change]:
        """The changes of the first list, once its BOOKMARK arrived."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not any(e.type == "BOOKMARK" for e in self.events) and self.error is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("the watch did not list in time")
                self._changed.wait(remaining)
            if self.error is not None:
                raise self.error
            return changes(self.events)

    def stop(self) -> None:
        """Close the watch from this thread; the collecting thread ends."""
        self.watch.close()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "the watch did not stop when closed"


async def collect_async(
    watch: AsyncWatch[Any],
    count: int,
    synced: asyncio.Event | None = None,
    timeout: float = DELIVERY_TIMEOUT_S,
) -> list[WatchEvent[Any]]:
    """The events of an asyncio typed watch until ``count`` changes arrived.

    ``synced`` is set when the first BOOKMARK (the end of the first list) arrives.
    """
    events: list[WatchEvent[Any]] = []

    async def collect() -> None:
        async for event in watch:
            events.append(event)
            if event.type == "BOOKMARK" and synced is not None:
                synced.set()
            if len(changes(events)) >= count:
                return

    async with watch, asyncio.timeout(timeout):
        await collect()
    return events
