"""The asyncio proxied client's writes: alone while few are in flight, else in batches."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import httpx
import pytest

from gridweave_clients._shared import SOCKET_OPTIONS
from gridweave_clients.kuberay import AsyncProxiedClient
from gridweave_controller import AlreadyExists, Invalid, InvalidTransition, JobPhase, NotFound
from gridweave_controller.errors import TransportError
from tests.support.kuberay_fixtures import TOKEN, KubeRayServer

JOBS = "gridweavejobs"
BATCH = "/v1/crd/batch"


class CountingTransport(httpx.AsyncHTTPTransport):
    """Counts the requests sent, by path; ``fail_batches``: a batch's connection drops."""

    def __init__(self, *, fail_batches: bool = False) -> None:
        super().__init__(socket_options=SOCKET_OPTIONS)
        self.paths: Counter[str] = Counter()
        self.batched_calls = 0
        self.fail_batches = fail_batches

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.paths[request.url.path] += 1
        if request.url.path == BATCH:
            self.batched_calls += len(json.loads(await request.aread())["calls"])
        if self.fail_batches and request.url.path == BATCH:
            raise httpx.ReadError("connection lost after sending", request=request)
        return await super().handle_async_request(request)


def _client(server: KubeRayServer, transport: CountingTransport, alone: int) -> AsyncProxiedClient:
    return AsyncProxiedClient(server.url, TOKEN, transport=transport, batch_after=alone)


def _names(server: KubeRayServer) -> set[str]:
    return {raw["metadata"]["name"] for raw in server.store.list("gridweave", JOBS, None)}


class TestWritesTogether:
    def test_many_writes_at_once_take_few_requests_and_each_gets_its_result(
        self, kuberay: KubeRayServer
    ) -> None:
        transport = CountingTransport()

        async def run() -> list[Any]:
            client = _client(kuberay, transport, alone=2)
            try:
                names = [f"job-{i}" for i in range(40)]
                made = await asyncio.gather(
                    *(client.create_job(n, "alice", "s3://f", vram_mb=8) for n in names)
                )
                placed = await asyncio.gather(
                    *(client.set_job_allocated(n, "gpu-1", [i % 8]) for i, n in enumerate(names))
                )
                return [*made, *placed]
            finally:
                await client.close()

        results = asyncio.run(run())
        made, placed = results[:40], results[40:]
        assert [job.name for job in made] == [f"job-{i}" for i in range(40)]
        assert [job.phase for job in made] == [JobPhase.PENDING] * 40
        assert [(job.name, job.status.gpu_indices) for job in placed] == [
            (f"job-{i}", (i % 8,)) for i in range(40)
        ]
        requests = sum(transport.paths.values())
        assert transport.paths[BATCH] >= 2  # both rounds went together
        assert requests < 40  # 80 writes
        assert transport.batched_calls + requests - transport.paths[BATCH] == 80
        assert _names(kuberay) == {f"job-{i}" for i in range(40)}

    def test_each_caller_gets_its_own_refusal_as_the_controllers_exception(
        self, kuberay: KubeRayServer
    ) -> None:
        transport = CountingTransport()

        async def run() -> list[Any]:
            client = _client(kuberay, transport, alone=0)  # everything in batches
            try:
                await client.create_job("taken", "alice", "s3://f", vram_mb=8)
                await client.create_job("running", "alice", "s3://f", vram_mb=8)
                return await asyncio.gather(  # type: ignore[no-any-return]
                    client.create_job("taken", "alice", "s3://f", vram_mb=8),
                    client.set_job_running("running"),  # Pending cannot run
                    client.set_job_allocated("nobody", "gpu-1", [0]),
                    client.create_job("fine", "alice", "s3://f", vram_mb=8),
                    client.set_job_allocated("running", "gpu-1", [0, 1]),  # one GPU asked
                    return_exceptions=True,
                )
            finally:
                await client.close()

        duplicate, illegal, missing, fine, wrong = asyncio.run(run())
        assert isinstance(duplicate, AlreadyExists)
        assert isinstance(illegal, InvalidTransition)
        assert isinstance(missing, NotFound)
        assert not isinstance(fine, Exception) and fine.name == "fine"
        assert isinstance(wrong, Invalid) and wrong.field == "gpu_indices"
        assert set(transport.paths) == {BATCH}

    def test_a_lone_write_goes_alone_on_its_route(self, kuberay: KubeRayServer) -> None:
        transport = CountingTransport()

        async def run() -> None:
            client = _client(kuberay, transport, alone=4)
            try:
                await client.create_job("job-1", "alice", "s3://f", vram_mb=8)
                await client.set_job_allocated("job-1", "gpu-1", [0])
            finally:
                await client.close()

        asyncio.run(run())
        assert transport.paths == Counter({"/v1/crd/jobs": 1, "/v1/crd/jobs/job-1/allocated": 1})

    def test_a_bad_argument_is_refused_to_its_caller_before_anything_is_sent(
        self, kuberay: KubeRayServer
    ) -> None:
        transport = CountingTransport()

        async def run() -> None:
            client = _client(kuberay, transport, alone=0)
            try:
                await client.set_job_allocated("Not A Name", "gpu-1", [0])
            finally:
                await client.close()

        with pytest.raises(Invalid) as caught:
            asyncio.run(run())
        assert caught.value.field == "job_id"
        assert not transport.paths


class TestFailures:
    def test_a_lost_batch_fails_each_of_its_writes_without_sending_them_again(
        self, kuberay: KubeRayServer
    ) -> None:
        transport = CountingTransport(fail_batches=True)

        async def run() -> list[Any]:
            client = _client(kuberay, transport, alone=0)
            try:
                return await asyncio.gather(  # type: ignore[no-any-return]
                    *(client.create_job(f"job-{i}", "a", "s3://f", vram_mb=8) for i in range(5)),
                    return_exceptions=True,
                )
            finally:
                await client.close()

        results = asyncio.run(run())
        assert all(isinstance(result, TransportError) for result in results)
        assert transport.batched_calls == 5  # each write sent once, none again
        assert set(transport.paths) == {BATCH}

    def test_a_write_cancelled_while_it_waits_is_never_sent(self, kuberay: KubeRayServer) -> None:
        transport = CountingTransport()

        async def run() -> None:
            client = _client(kuberay, transport, alone=1)
            try:
                first = asyncio.create_task(client.create_job("first", "a", "s3://f", vram_mb=8))
                await asyncio.sleep(0)  # the first is in flight: the next one waits
                waiting = asyncio.create_task(
                    client.create_job("cancelled", "a", "s3://f", vram_mb=8)
                )
                await asyncio.sleep(0)
                waiting.cancel()
                await first
                with pytest.raises(asyncio.CancelledError):
                    await waiting
                await asyncio.sleep(0.2)  # a batch, had one been sent, would have landed
            finally:
                await client.close()

        asyncio.run(run())
        assert _names(kuberay) == {"first"}
        assert transport.paths[BATCH] == 0
