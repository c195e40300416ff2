"""``gridweave_controller.aio``: the asyncio client runs the same flows, connects the same way."""

from __future__ import annotations

import asyncio
import gc
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gridweave_controller import Conflict, CrdClient, JobPhase, NotFound, TransportError, aio
from gridweave_controller._kube_aio_store import AsyncKubeStore
from gridweave_controller.aio import AsyncCrdClient
from gridweave_controller.operations import OPERATIONS
from tests.controller.test_crd_module import write_kubeconfig
from tests.support.http_server import free_port
from tests.support.memory_store import AsyncMemoryStore, MemoryStore


@pytest.fixture(autouse=True)
def outside_a_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No in-cluster service account, no namespace or proxy from the environment."""
    for name in ("KUBERNETES_SERVICE_HOST", "KUBERAY_NAMESPACE", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    yield


def _connected(**kwargs: Any) -> AsyncCrdClient:
    async def connect_and_close() -> AsyncCrdClient:
        client = await aio.connect(**kwargs)
        await client.close()
        return client

    return asyncio.run(connect_and_close())


class TestConnect:
    def test_explicit_kubeconfig_and_namespace(self, tmp_path: Path) -> None:
        config = write_kubeconfig(tmp_path / "config", "https://10.1.2.3:6443")
        client = _connected(kubeconfig=config, namespace="team-a")
        assert client.namespace == "team-a"
        assert isinstance(client.store, AsyncKubeStore)
        configuration = client.store.api_client.configuration
        assert configuration.host == "https://10.1.2.3:6443"
        # no proxy or netrc lookups on every request: the environment is read once, here
        assert configuration.client_session_kwargs == {"trust_env": False}
        assert configuration.proxy is None

    def test_environment_and_default_namespace(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "c", "https://h:1")))
        assert _connected().namespace == "gridweave"
        monkeypatch.setenv("KUBERAY_NAMESPACE", "gw-prod")
        assert _connected().namespace == "gw-prod"

    def test_proxy_from_the_environment_is_kept_unless_bypassed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        config = write_kubeconfig(tmp_path / "c", "https://api.example.com:6443")
        monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example.com:3128")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        proxied = _connected(kubeconfig=config)
        assert isinstance(proxied.store, AsyncKubeStore)
        assert proxied.store.api_client.configuration.proxy == "http://proxy.example.com:3128"
        monkeypatch.setenv("NO_PROXY", "api.example.com")
        direct = _connected(kubeconfig=config)
        assert isinstance(direct.store, AsyncKubeStore)
        assert direct.store.api_client.configuration.proxy is None

    def test_no_configuration_is_a_transport_error(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
        monkeypatch.setenv("HOME", str(tmp_path))
        with pytest.raises(TransportError):
            _connected()

    def test_nothing_listening_is_a_transport_error(self, tmp_path: Path) -> None:
        config = write_kubeconfig(tmp_path / "c", f"http://127.0.0.1:{free_port()}")

        async def read() -> None:
            client = await aio.connect(kubeconfig=config, namespace="gridweave")
            try:
                await client.get_job("job-1")
            finally:
                await client.close()

        with pytest.raises(TransportError):
            asyncio.run(read())


class TestSameFlows:
    def test_every_operation_has_the_blocking_signature(self) -> None:
        store = MemoryStore()
        blocking_client = CrdClient(store, "gridweave")
        async_client = AsyncCrdClient(AsyncMemoryStore(store), "gridweave")
        for operation in OPERATIONS:
            blocking = getattr(blocking_client, operation.name)
            awaited = getattr(async_client, operation.name)
            assert inspect.signature(awaited) == inspect.signature(blocking), operation.name
            assert inspect.iscoroutinefunction(awaited), operation.name
            assert awaited.__doc__ == blocking.__doc__ == operation.__doc__
            assert "Flow" not in str(inspect.signature(blocking).return_annotation)

    def test_lifecycle_over_an_asyncio_store(self) -> None:
        store = MemoryStore()
        client = AsyncCrdClient(AsyncMemoryStore(store), "gridweave")

        async def lifecycle() -> list[JobPhase]:
            job = await client.create_job("job-1", "alice", "s3://f", vram_mb=8)
            allocated = await client.set_job_allocated("job-1", "n1", [0])
            running = await client.set_job_running("job-1")
            done = await client.set_job_completed("job-1", 1.5)
            waited = await client.wait_for_job("job-1", ["Completed"], timeout=1)
            return [job.phase, allocated.phase, running.phase, done.phase, waited.phase]

        assert asyncio.run(lifecycle()) == [
            JobPhase.PENDING,
            JobPhase.ALLOCATED,
            JobPhase.RUNNING,
            JobPhase.COMPLETED,
            JobPhase.COMPLETED,
        ]
        # the blocking client over the same store sees the same object
        assert CrdClient(store, "gridweave").get_job("job-1").status.billed_seconds == 2

    def test_conflicts_are_retried_with_the_asyncio_sleep(self) -> None:
        store = MemoryStore()
        pauses: list[float] = []

        async def sleep(seconds: float) -> None:
            pauses.append(seconds)

        client = AsyncCrdClient(AsyncMemoryStore(store), "gridweave", sleep=sleep)

        async def allocate() -> JobPhase:
            await client.create_job("job-1", "alice", "s3://f", vram_mb=8)
            store.inject_conflicts(2)
            return (await client.set_job_allocated("job-1", "n1", [0])).phase

        assert asyncio.run(allocate()) is JobPhase.ALLOCATED
        assert len(pauses) == 2 and all(0 <= p <= 0.5 for p in pauses)

    def test_conflicts_past_the_attempts_and_errors_reach_the_caller(self) -> None:
        store = MemoryStore()

        async def no_wait(_: float) -> None:
            return None

        client = AsyncCrdClient(
            AsyncMemoryStore(store), "gridweave", sleep=no_wait, max_write_attempts=2
        )

        async def allocate() -> None:
            await client.create_job("job-1", "alice", "s3://f", vram_mb=8)
            store.inject_conflicts(2)
            await client.set_job_allocated("job-1", "n1", [0])

        with pytest.raises(Conflict):
            asyncio.run(allocate())
        with pytest.raises(NotFound):
            asyncio.run(client.get_job("job-2"))


class _BrokenStore:
    """A store whose reads fail with an error that is not the controller's."""

    def get(self, *_: Any) -> dict[str, Any]:
        raise RuntimeError("disk on fire")


class _AsyncBrokenStore:
    async def get(self, *_: Any) -> dict[str, Any]:
        raise RuntimeError("disk on fire")


def test_a_store_failure_that_is_no_controller_error_reaches_the_caller_unchanged() -> None:
    with pytest.raises(RuntimeError, match="disk on fire"):
        CrdClient(_BrokenStore(), "gridweave").get_job("job-1")  # type: ignore[arg-type]
    awaited = AsyncCrdClient(_AsyncBrokenStore(), "gridweave")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="disk on fire"):
        asyncio.run(awaited.set_job_running("job-1"))


def test_no_proxy_address_ranges_count_as_the_blocking_client_counts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_kubeconfig(tmp_path / "c", "https://10.96.0.1:443")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example.com:3128")
    monkeypatch.setenv("NO_PROXY", "10.0.0.0/8,.svc")
    connected = _connected(kubeconfig=config)
    assert isinstance(connected.store, AsyncKubeStore)
    assert connected.store.api_client.configuration.proxy is None


class TestErrorMapping:
    def test_an_apiserver_answer_names_its_error(self) -> None:
        from kubernetes.aio.client.exceptions import ApiException

        from gridweave_controller._kube_store import raise_mapped

        body = '{"kind":"Status","reason":"NotFound","code":404,"message":"gone"}'
        with pytest.raises(NotFound, match="gone"):
            raise_mapped(ApiException(status=404, reason="Not Found", body=body), ApiException)

    def test_an_http_library_error_with_a_status_is_no_answer(self) -> None:
        from kubernetes.aio.client.exceptions import ApiException

        from gridweave_controller._kube_store import raise_mapped

        class MalformedResponse(Exception):  # like aiohttp's errors: a status of its own
            status = 400

        with pytest.raises(TransportError):
            raise_mapped(MalformedResponse("Content-Length: nope"), ApiException)


def test_failed_calls_leave_no_reference_cycles() -> None:
    """A failure raised through a driver must not keep the driver's frame (and itself) alive."""
    client = CrdClient(MemoryStore(), "gridweave")
    awaited = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")

    def blocking_failures() -> None:
        for _ in range(50):
            try:
                client.get_job("job-1")
            except NotFound:
                pass

    async def awaited_failures() -> int:
        gc.collect()  # what the event loop made so far
        for _ in range(50):
            try:
                await awaited.get_job("job-1")
            except NotFound:
                pass
        return gc.collect()

    gc.collect()
    gc.disable()
    try:
        blocking_failures()
        assert gc.collect() == 0  # each failure used to leave about 20 objects in a cycle
        assert asyncio.run(awaited_failures()) == 0
    finally:
        gc.enable()
