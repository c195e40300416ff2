"""job_gateway.crd_client against kuberay-service on a real port: errors, auth, retries."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from gridweave_controller import (
    AlreadyExists,
    Invalid,
    InvalidTransition,
    Job,
    JobPhase,
    NotFound,
    TransportError,
)
from job_gateway import crd_client
from tests.support.http_server import free_port
from tests.support.kuberay_fixtures import TOKEN, KubeRayServer


@pytest.fixture
def proxied(kuberay: KubeRayServer) -> Iterator[KubeRayServer]:
    crd_client.connect(kuberay.url, TOKEN)
    yield kuberay
    crd_client.close()


def _job(job_id: str = "job-1") -> Job:
    return crd_client.create_job(job_id, "alice@example.com", "file:///fn.pkl", vram_mb=2000)


class TestErrorsAreTheControllersOwn:
    def test_not_found(self, proxied: KubeRayServer) -> None:
        with pytest.raises(NotFound) as info:
            crd_client.get_job("missing")
        assert info.value.status["reason"] == "NotFound"

    def test_already_exists(self, proxied: KubeRayServer) -> None:
        _job()
        with pytest.raises(AlreadyExists):
            _job()

    def test_invalid_transition_names_both_phases(self, proxied: KubeRayServer) -> None:
        _job()
        with pytest.raises(InvalidTransition) as info:
            crd_client.set_job_completed("job-1", 1.0)
        assert (info.value.current, info.value.target) == ("Pending", "Completed")

    def test_invalid_id_is_refused_before_any_request(self, proxied: KubeRayServer) -> None:
        with pytest.raises(Invalid) as info:
            crd_client.get_job("../../etc")
        assert info.value.field == "job_id"

    def test_server_side_validation_names_the_field(self, proxied: KubeRayServer) -> None:
        with pytest.raises(Invalid) as info:
            crd_client.create_job("job-2", "alice", "file:///fn.pkl", vram_mb=0)
        assert "vram_mb" in str(info.value)

    def test_wrong_token_is_a_transport_error(self, kuberay: KubeRayServer) -> None:
        crd_client.connect(kuberay.url, "not-the-token")
        try:
            with pytest.raises(TransportError) as info:
                crd_client.list_jobs()
        finally:
            crd_client.close()
        assert info.value.status["code"] == 401
        assert "token" in str(info.value)

    def test_nobody_listening_is_a_transport_error(self) -> None:
        crd_client.connect(f"http://127.0.0.1:{free_port()}", TOKEN)
        try:
            with pytest.raises(TransportError):
                crd_client.get_job("job-1")
        finally:
            crd_client.close()


class TestTypedResults:
    def test_the_same_models_come_back(self, proxied: KubeRayServer) -> None:
        created = _job()
        allocated = crd_client.set_job_allocated("job-1", "gpu-1", [2])
        assert isinstance(created, Job)
        assert allocated.phase is JobPhase.ALLOCATED
        assert allocated.status.gpu_indices == (2,)
        again = crd_client.set_job_allocated("job-1", "gpu-1", [2])
        assert again.metadata.resource_version == allocated.metadata.resource_version

    def test_wait_for_job_returns_once_in_phase(self, proxied: KubeRayServer) -> None:
        _job()
        crd_client.set_job_cancelled("job-1", "user asked")
        waited = crd_client.wait_for_job("job-1", ["Cancelled", "Failed"], timeout=5)
        assert waited.phase is JobPhase.CANCELLED


class _DropFirst(httpx.BaseTransport):
    """Drops the connection of the first ``count`` requests, then sends for real."""

    def __init__(self, count: int) -> None:
        self.remaining = count
        self.seen: list[str] = []
        self.real = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request.method)
        if self.remaining > 0:
            self.remaining -= 1
            raise httpx.RemoteProtocolError("connection dropped", request=request)
        return self.real.handle_request(request)

    def close(self) -> None:
        self.real.close()


class TestRetries:
    def test_reads_are_retried_after_a_dropped_connection(self, kuberay: KubeRayServer) -> None:
        crd_client.connect(kuberay.url, TOKEN)
        _job()
        dropping = _DropFirst(2)
        crd_client.connect(kuberay.url, TOKEN, transport=dropping)
        try:
            job = crd_client.get_job("job-1")
        finally:
            crd_client.close()
        assert job.phase is JobPhase.PENDING
        assert dropping.seen == ["GET", "GET", "GET"]

    @pytest.mark.parametrize(
        "write",
        [
            lambda: _job(),
            lambda: crd_client.set_job_allocated("job-0", "gpu-1", [0]),
            lambda: crd_client.delete_job("job-0"),
        ],
        ids=["create", "setter", "delete"],
    )
    def test_writes_are_not_retried_once_sent(
        self, kuberay: KubeRayServer, write: Callable[[], object]
    ) -> None:
        crd_client.connect(kuberay.url, TOKEN)
        _job("job-0")
        dropping = _DropFirst(1)
        crd_client.connect(kuberay.url, TOKEN, transport=dropping)
        try:
            with pytest.raises(TransportError):
                write()
        finally:
            crd_client.close()
        assert len(dropping.seen) == 1

    def test_first_use_from_many_threads_makes_one_connection(
        self, kuberay: KubeRayServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("KUBERAY_URL", kuberay.url)
        monkeypatch.setenv("GRIDWEAVE_SERVICE_TOKEN", TOKEN)
        client = crd_client.ProxiedClient()
        connects: list[str] = []
        original = client.connect

        def counting_connect(*args: Any, **kwargs: Any) -> None:
            connects.append("connect")
            original(*args, **kwargs)

        monkeypatch.setattr(client, "connect", counting_connect)
        with ThreadPoolExecutor(8) as pool:
            listed = list(pool.map(lambda _: client.list_jobs(), range(16)))
        client.close()
        assert listed == [[]] * 16
        assert connects == ["connect"]
