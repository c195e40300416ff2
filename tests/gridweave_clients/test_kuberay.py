"""gridweave_clients.kuberay: the proxied clients are derived from the declared operations."""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest

from gridweave_clients.kuberay import AsyncProxiedClient, ProxiedClient, request_for
from gridweave_controller import (
    CrdClient,
    Invalid,
    InvalidTransition,
    JobPhase,
    NotFound,
    TransportError,
)
from gridweave_controller.operations import OPERATIONS, Operations
from tests.support.kuberay_fixtures import TOKEN, KubeRayServer
from tests.support.memory_store import MemoryStore


class TestDerivedFromTheDeclarations:
    @pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
    def test_both_proxied_clients_have_the_direct_signature(self, operation) -> None:
        direct = getattr(CrdClient(MemoryStore(), "gridweave"), operation.name)
        blocking = getattr(ProxiedClient(), operation.name)
        awaited = getattr(AsyncProxiedClient("http://127.0.0.1:1", TOKEN), operation.name)
        assert inspect.signature(blocking) == inspect.signature(direct)
        assert inspect.signature(awaited) == inspect.signature(direct)
        assert inspect.iscoroutinefunction(awaited)
        assert blocking.__doc__ == awaited.__doc__ == direct.__doc__

    def test_every_operation_but_the_composed_one_has_a_route(self) -> None:
        unrouted = [op.name for op in OPERATIONS if op.route is None]
        assert unrouted == ["wait_for_job"]
        routes = [(op.route.method, op.route.path) for op in OPERATIONS if op.route is not None]
        assert len(routes) == len(set(routes))


class TestRequests:
    def test_a_setter_is_a_camel_case_body_on_its_route(self) -> None:
        call = request_for(Operations.set_job_allocated, ("job-1", "gpu-1", (2, 3)), {})
        assert (call.method, call.path, call.params) == (
            "POST",
            "/v1/crd/jobs/job-1/allocated",
            None,
        )
        assert call.body is not None
        assert json.loads(call.body) == {"node": "gpu-1", "gpuIndices": [2, 3]}
        assert not call.idempotent

    def test_a_list_sends_only_the_given_filters_as_query(self) -> None:
        call = request_for(Operations.list_jobs, (), {"user_id": "alice@example.com"})
        assert (call.method, call.path, call.body) == ("GET", "/v1/crd/jobs", None)
        assert call.params == {"userId": "alice@example.com"}

    @pytest.mark.parametrize(
        ("operation", "args", "field"),
        [
            (Operations.get_job, ("../../etc",), "job_id"),
            (Operations.delete_endpoint, ("Not_A_Name",), "endpoint_id"),
            (Operations.set_job_completed, ("job-1", float("nan")), "wall_seconds"),
            (Operations.set_job_failed, ("job-1", "Lost", "", float("inf")), "wall_seconds"),
        ],
    )
    def test_what_cannot_travel_is_refused_before_sending(self, operation, args, field) -> None:
        with pytest.raises(Invalid) as caught:
            request_for(operation, args, {})
        assert caught.value.field == field

    def test_a_wrong_call_is_a_type_error_as_on_the_direct_client(self) -> None:
        with pytest.raises(TypeError):
            request_for(Operations.get_job, (), {"job": "job-1"})


class TestAsyncProxiedClient:
    def test_a_job_lifecycle_over_real_http(self, kuberay: KubeRayServer) -> None:
        async def lifecycle() -> list[JobPhase]:
            client = AsyncProxiedClient(kuberay.url, TOKEN)
            try:
                made = await client.create_job("job-1", "alice", "s3://f", vram_mb=8, gpu_count=2)
                await client.set_job_allocated("job-1", "gpu-1", [0, 1])
                await client.set_job_running("job-1")
                done = await client.set_job_completed("job-1", 1.5)
                waited = await client.wait_for_job("job-1", ["Completed"], timeout=5)
                mine = await client.list_jobs(user_id="alice")
                with pytest.raises(InvalidTransition):
                    await client.set_job_running("job-1")
                await client.delete_job("job-1")
                with pytest.raises(NotFound):
                    await client.get_job("job-1")
                assert [job.name for job in mine] == ["job-1"]
                assert done.status.billed_seconds == 2
                return [made.phase, done.phase, waited.phase]
            finally:
                await client.close()

        assert asyncio.run(lifecycle()) == [
            JobPhase.PENDING,
            JobPhase.COMPLETED,
            JobPhase.COMPLETED,
        ]
        assert kuberay.store.list("gridweave", "gridweavejobs", None) == []

    def test_a_closed_client_sends_nothing(self, kuberay: KubeRayServer) -> None:
        async def after_close() -> None:
            client = AsyncProxiedClient(kuberay.url, TOKEN)
            await client.close()
            await client.get_job("job-1")

        before = kuberay.store.calls["get"]
        with pytest.raises(TransportError):
            asyncio.run(after_close())
        assert kuberay.store.calls["get"] == before

    def test_the_token_is_required(self) -> None:
        with pytest.raises(Invalid) as caught:
            AsyncProxiedClient("http://127.0.0.1:1", "")
        assert caught.value.field == "GRIDWEAVE_SERVICE_TOKEN"
